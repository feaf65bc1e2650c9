"""The speed and memory targets of the layers and the markdown report of a
benchmark run."""

MIB = 2**20

NAMES = {
    "ours_dot": "DotAttention",
    "ours_multiplicative": "MultiplicativeAttention",
    "ours_additive": "AdditiveAttention",
    "keras_attention_dot": "keras Attention",
    "keras_dense_attention": "Dense + keras Attention",
    "keras_dense_additive": "2 Dense + keras AdditiveAttention",
    "keras_mha_1head": "keras MultiHeadAttention(1 head)",
}


def check_targets(results):
    """Each target: the measured figure, the bound and whether it holds."""
    targets = []
    rows = results.get("layers", [])
    for kind in ("dot", "multiplicative"):
        ratios = [r["time_ratio"] for r in rows if r["kind"] == kind]
        if ratios:
            worst = max(ratios)
            targets.append({
                "target": f"{kind} time / Keras time <= 1.0 (worst case)",
                "measured": round(worst, 3),
                "met": worst <= 1.0,
            })
    longest = max((r["source"] for r in rows), default=None)
    for r in rows:
        if r["kind"] == "additive" and r["source"] == longest:
            shape = f"b={r['batch']} T=S={r['source']} d={r['dim']}"
            targets.append({
                "target": f"additive time / Keras time <= 0.8 ({shape})",
                "measured": round(r["time_ratio"], 3),
                "met": r["time_ratio"] <= 0.8,
            })
            targets.append({
                "target": f"additive peak memory / Keras <= 0.5 ({shape})",
                "measured": round(r["memory_ratio"], 3),
                "met": r["memory_ratio"] <= 0.5,
            })
    eff = results.get("efficiency", [])
    if eff:
        best = max(eff, key=lambda r: r["dot_train_efficiency"])
        targets.append({
            "target": "dot layer FLOP/s / batched matmul FLOP/s >= 0.6 "
            f"(forward+backward, best shape T=S={best['source']} "
            f"d={best['dim']})",
            "measured": round(best["dot_train_efficiency"], 3),
            "met": best["dot_train_efficiency"] >= 0.6,
        })
    return targets


def _ms(seconds):
    return f"{seconds * 1e3:.1f}"


def _mib(n):
    return f"{n / MIB:.1f}"


def markdown(results):
    m = results["machine"]
    lines = [
        f"# Benchmark results ({results['mode']} mode)",
        "",
        f"Machine: {m['cpu']}, {m['cpu_count']} cores, "
        f"{m['memory_gib']} GiB; GPUs: {', '.join(m['gpus']) or 'none'}; "
        f"TensorFlow {m['tensorflow']}, Keras {m['keras']} "
        f"({m['backend']} backend); {results['started']}.",
        "",
        "Times are medians of interleaved rounds after warm-up; ratios are "
        "medians of the per-round ratios (ours / Keras, below 1 is better). "
        "Peak memory: TensorFlow allocator peak during one step above the "
        "inputs and weights.",
        "",
    ]
    if results.get("targets"):
        lines += ["## Targets", "", "| target | measured | met |",
                  "|---|---|---|"]
        for t in results["targets"]:
            lines.append(
                f"| {t['target']} | {t['measured']} | "
                f"{'yes' if t['met'] else '**no**'} |"
            )
        lines.append("")
    if results.get("layers"):
        lines += [
            "## Layers: forward + backward against Keras",
            "",
            "| layer | Keras construction | batch | T=S | d | ours ms | "
            "Keras ms | time ratio | ours MiB | Keras MiB | memory ratio | "
            "time vs MHA(1 head) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in results["layers"]:
            o, k = r["ours"], r["keras"]
            mha = r.get("time_ratio_vs_mha")
            lines.append(
                f"| {NAMES[o]} | {NAMES[k]} | {r['batch']} | {r['source']} | "
                f"{r['dim']} | {_ms(r['time_s'][o])} | {_ms(r['time_s'][k])} | "
                f"{r['time_ratio']:.2f} | {_mib(r['peak_bytes'][o])} | "
                f"{_mib(r['peak_bytes'][k])} | {r['memory_ratio']:.2f} | "
                f"{'' if mha is None else f'{mha:.2f}'} |"
            )
        lines.append("")
    if results.get("efficiency"):
        lines += [
            "## Efficiency against a plain batched matmul",
            "",
            "Matmul FLOPs only (`4*B*T*S*d` forward, three times that for "
            "forward+backward, plus the key projection for the "
            "multiplicative layer), divided by the time of the step, "
            "against `tf.matmul` of `(B,T,d) x (B,d,S)` measured in the same "
            "rounds.",
            "",
            "| batch | T=S | d | matmul GFLOP/s | dot fwd+bwd | dot fwd | "
            "multiplicative fwd+bwd | multiplicative fwd |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in results["efficiency"]:
            cells = []
            for kind in ("dot", "multiplicative"):
                for mode in ("train", "forward"):
                    cells.append(
                        f"{r[f'{kind}_{mode}_gflops']:.1f} GFLOP/s "
                        f"({r[f'{kind}_{mode}_efficiency']:.0%})"
                    )
            lines.append(
                f"| {r['batch']} | {r['source']} | {r['dim']} | "
                f"{r['matmul_gflops']:.1f} | " + " | ".join(cells) + " |"
            )
        lines.append("")
    if results.get("scaling"):
        rows = results["scaling"]
        names = []
        for r in rows:
            for n in r["time_s"]:
                if n not in names:
                    names.append(n)
        lines += [
            "## Scaling with the source length",
            "",
            f"batch {rows[0]['batch']}, Tq {rows[0]['target']}, "
            f"d {rows[0]['dim']}; forward+backward ms / peak MiB.",
            "",
            "| S | " + " | ".join(NAMES[n] for n in names) + " |",
            "|---|" + "---|" * len(names),
        ]
        for r in rows:
            cells = []
            for n in names:
                if n in r["time_s"]:
                    cells.append(
                        f"{_ms(r['time_s'][n])} / {_mib(r['peak_bytes'][n])}"
                    )
                else:
                    cells.append("over budget")
            lines.append(f"| {r['source']} | " + " | ".join(cells) + " |")
        lines.append("")
    nmt = results.get("nmt")
    if nmt:
        lines += ["## NMT throughput", ""]
        if nmt.get("skipped"):
            lines += [f"Skipped: {nmt['skipped']}", ""]
        else:
            lines += [
                f"Model: {nmt.get('model', '')}",
                "",
                "| measurement | value |",
                "|---|---|",
            ]
            for key, value in nmt.get("figures", {}).items():
                lines.append(f"| {key} | {value} |")
            lines.append("")
            for note in nmt.get("notes", []):
                lines.append(f"- {note}")
            lines.append("")
    lines.append(f"Total benchmark time: {results.get('seconds', 0):.0f} s.")
    return "\n".join(lines) + "\n"
