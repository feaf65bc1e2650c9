#!/bin/bash
# Alignment figures of docs/alignment_results.md on the fra-eng pairs.
# Usage: benchmarks/alignment/run_fra_eng.sh [FRA_TXT] [OUT_DIR]
#   FRA_TXT: the Anki French-English file (fra.txt of
#   https://www.manythings.org/anki/fra-eng.zip); default $FRA, else
#   ../shared/data/fra-eng/fra.txt. OUT_DIR: default runs/fra.
#   PY: the Python to run (default .venv/bin/python, niced).
# Runs one step at a time, niced; about 90 min on 2 shared CPU cores.
# SKIP_PREP=1 / SKIP_TRAIN=1 reuse the data / the runs already in OUT_DIR;
# SKIP_NOBRIDGE=1 / SKIP_KEYS=1 leave out the runs without the bridge /
# with embeddings as attention keys; EMB=1 adds the dates fix runs
# (embeddings as values); HEADS=1 adds
# the alignment heads (step 8: the guided head, 4 and 8 epochs and on
# every pair, and the unsupervised lexical head over four seeds).
# PAIRS=none leaves out steps 3-5 (the translation-attention runs);
# HEAD_SETTINGS picks step 8's guided-head runs (TAG:PAIRS:EPOCHS, e.g.
# headall:1000000:4) and
# SKIP_LEXICAL=1 leaves out its lexical-head and unguided runs.
set -euo pipefail
FRA=${1:-${FRA:-../shared/data/fra-eng/fra.txt}}
D=${2:-runs/fra}
N=${N:-30000}          # training pairs (the first N of the shuffled file)
EPOCHS=${EPOCHS:-4}
GOLD=benchmarks/data/fra_eng_gold
PY="nice -n 10 ${PY:-.venv/bin/python}"
export PYTHONPATH=$PWD TF_CPP_MIN_LOG_LEVEL=2
mkdir -p "$D"

# 1. The data: the gold pairs first (as Anki lines, English<TAB>French),
#    then fra.txt; shuffled (the gold stays first) so that the first N
#    pairs cover every length (fra.txt is sorted by length).
if [ -z "${SKIP_PREP:-}" ]; then
awk -F'\t' '{print $2"\t"$1}' $GOLD/pairs.tsv > "$D/gold_anki.txt"
cat "$D/gold_anki.txt" "$FRA" > "$D/fra_gold.txt"

# 2. eflomal on every pair, both directions, grow-diag-final-and; scored
#    on the gold (the first 100 pairs). eflomal is not seeded: its AER
#    moves by about half a point from one run to the next.
$PY -m benchmarks.alignment.eflomal_recipe --data "$D/fra_gold.txt" \
    --max-pairs 1000000 --out "$D/eflomal.align" --gold $GOLD/gold.pharaoh
$PY -m benchmarks.alignment.shuffle_pairs --data "$D/fra_gold.txt" \
    --links "$D/eflomal.align" --keep-first 100 \
    --out-data "$D/fra_shuf.txt" --out-links "$D/eflomal_shuf.align"
# The links are French word first (the pairs' French -> English
# orientation); `--guided-alignment` wants the run's source word first,
# so the English -> French run gets them transposed.
$PY -m benchmarks.alignment.transpose_links "$D/eflomal_shuf.align" \
    "$D/eflomal_shuf_en_fr.align"
fi

# 3. The example (defaults: bidirectional LSTM 128, general score, bridge),
#    each direction guided by eflomal's grow-diag-final-and links, then
#    unsupervised, then unsupervised without the bridge, then unsupervised
#    with the source embeddings as attention keys (values stay the encoder
#    states), with and without the bridge. The gold pairs fall in the test
#    split (README of the gold).
#    Float32 (the figures of docs/alignment_results.md are float32, the
#    default before `--mixed-precision auto`), then the unsupervised
#    and embedding-keys pairs again under mixed_bfloat16 (BF16=1).
train() {
    echo "== train $*"
    timeout 1500 $PY -m examples.nmt train --data "$D/fra_shuf.txt" \
        --data-format anki --max-examples $N --epochs $EPOCHS --verbose 2 \
        --mixed-precision off "$@"
}
# The pairs of runs of steps 4 and 5, name:forward:reverse (PAIRS=...
# picks some).
ALL="guided:fr_en_guided:en_fr_guided unsup:fr_en:en_fr"
[ -n "${SKIP_NOBRIDGE:-}" ] || ALL="$ALL nobridge:fr_en_nobridge:en_fr_nobridge"
[ -n "${SKIP_KEYS:-}" ] ||
    ALL="$ALL keys:fr_en_keys:en_fr_keys keysnb:fr_en_keysnb:en_fr_keysnb"
[ -z "${BF16:-}" ] ||
    ALL="$ALL bf16:fr_en_bf16:en_fr_bf16 bf16keys:fr_en_bf16keys:en_fr_bf16keys
bf16guided:fr_en_bf16guided:en_fr_bf16guided"
PAIRS=${PAIRS:-$ALL}
[ "$PAIRS" != none ] || PAIRS=""
if [ -z "${SKIP_TRAIN:-}" ] && [ -n "$PAIRS" ]; then
train --out "$D/fr_en_guided" --guided-alignment "$D/eflomal_shuf.align"
train --out "$D/en_fr_guided" --direction from-english \
    --guided-alignment "$D/eflomal_shuf_en_fr.align"
train --out "$D/fr_en"
train --out "$D/en_fr" --direction from-english
if [ -z "${SKIP_NOBRIDGE:-}" ]; then
train --out "$D/fr_en_nobridge" --no-bridge
train --out "$D/en_fr_nobridge" --direction from-english --no-bridge
fi
if [ -z "${SKIP_KEYS:-}" ]; then
train --out "$D/fr_en_keys" --attention-keys embedding
train --out "$D/en_fr_keys" --direction from-english \
    --attention-keys embedding
train --out "$D/fr_en_keysnb" --attention-keys embedding --no-bridge
train --out "$D/en_fr_keysnb" --direction from-english \
    --attention-keys embedding --no-bridge
fi
if [ -n "${BF16:-}" ]; then
# (The last flag wins: these train under mixed_bfloat16.)
train --out "$D/fr_en_bf16" --mixed-precision bfloat16
train --out "$D/en_fr_bf16" --direction from-english \
    --mixed-precision bfloat16
train --out "$D/fr_en_bf16keys" --attention-keys embedding \
    --mixed-precision bfloat16
train --out "$D/en_fr_bf16keys" --direction from-english \
    --attention-keys embedding --mixed-precision bfloat16
train --out "$D/fr_en_bf16guided" --mixed-precision bfloat16 \
    --guided-alignment "$D/eflomal_shuf.align"
train --out "$D/en_fr_bf16guided" --direction from-english \
    --mixed-precision bfloat16 --guided-alignment "$D/eflomal_shuf_en_fr.align"
# The seed decides more than the precision: French -> English, seed 1.
train --out "$D/fr_en_seed1" --seed 1
train --out "$D/fr_en_seed1_bf16" --seed 1 --mixed-precision bfloat16
fi
fi

# 4. Teacher-forced attention on the gold pairs -> Pharaoh -> AER: each
#    direction alone (English -> French transposed by `--reverse-run`),
#    then both symmetrized three ways; argmax of the step that predicts a
#    word, then of the step that reads it (`--shift`, Shift-Att).
align() { $PY -m examples.nmt align --data $GOLD/pairs.tsv --quiet "$@"; }
score() {
    echo "== $1"
    $PY -m examples.nmt score-alignment --gold $GOLD/gold.pharaoh \
        --hyp "$D/$1.align" --json "$D/$1.json"
}
for p in $PAIRS; do
    IFS=: read -r name fwd rev <<< "$p"
    for shift in "" --shift; do
        tag=$name${shift:+_shift}
        align --run "$D/$fwd" $shift --out "$D/${tag}_fr_en.align"
        align --reverse-run "$D/$rev" $shift --out "$D/${tag}_en_fr.align"
        for m in grow-diag-final-and grow-diag intersection; do
            align --run "$D/$fwd" --reverse-run "$D/$rev" $shift \
                --symmetrize $m --out "$D/${tag}_$m.align"
        done
        for m in fr_en en_fr grow-diag-final-and grow-diag intersection; do
            score "${tag}_$m"
        done
    done
    # Threshold links (a word may get several links or none), each
    # symmetrization.
    for t in 0.2 0.3 0.5; do
        for m in grow-diag-final-and grow-diag intersection union; do
            align --run "$D/$fwd" --reverse-run "$D/$rev" --symmetrize $m \
                --links threshold --threshold $t \
                --out "$D/${name}_t${t}_$m.align"
            score "${name}_t${t}_$m"
        done
    done
done

# 5. Translation quality on each run's test split (greedy, first 1000
#    pairs).
for p in $PAIRS; do
    IFS=: read -r name fwd rev <<< "$p"
    for r in $fwd $rev; do
        echo "== $r test"
        $PY -m examples.nmt evaluate --run "$D/$r" --beam-width 0 \
            --max-examples 1000
    done
done

# 6. Unsupervised, with the dates demo's fix (embeddings as attention
#    values, [END] not attended): each direction and symmetrized.
if [ -n "${EMB:-}" ]; then
FIX="--attention-values embedding --no-attend-source-end"
train --out "$D/fr_en_emb" $FIX
align --run "$D/fr_en_emb" --out "$D/fr_en_emb.align"
score fr_en_emb
train --out "$D/en_fr_emb" --direction from-english $FIX
align --reverse-run "$D/en_fr_emb" --out "$D/en_fr_emb.align"
align --run "$D/fr_en_emb" --reverse-run "$D/en_fr_emb" \
    --out "$D/sym_emb.align"
for m in en_fr_emb sym_emb; do score $m; done
$PY -m examples.nmt evaluate --run "$D/fr_en_emb" --beam-width 0 \
    --max-examples 1000
fi

# 7. The seed-1 French -> English runs (BF16=1): alone, AER and BLEU.
if [ -n "${BF16:-}" ]; then
for r in fr_en_seed1 fr_en_seed1_bf16; do
    align --run "$D/$r" --out "$D/$r.align"
    score "$r"
    $PY -m examples.nmt evaluate --run "$D/$r" --beam-width 0 \
        --max-examples 1000
done
fi

# 8. The alignment heads (`--alignment-head`, docs/alignment.md): the
#    guided head in both directions (4 and 8 epochs on the N pairs, and 4
#    epochs on every pair of the file: the eflomal links cover them all),
#    each alone and symmetrized, plain and thresholded links; then the
#    unsupervised lexical head over seeds 0-3 in both directions,
#    symmetrized seed by seed; and the unguided model on every pair.
if [ -n "${HEADS:-}" ]; then
for setting in ${HEAD_SETTINGS:-head:$N:4 head8:$N:8 headall:1000000:4}; do
    IFS=: read -r tag pairs epochs <<< "$setting"
    for dir in fr_en en_fr; do
        links="$D/eflomal_shuf.align"; flags=""
        if [ $dir = en_fr ]; then
            links="$D/eflomal_shuf_en_fr.align"; flags="--direction from-english"
        fi
        [ -f "$D/${tag}_$dir/history.json" ] ||
            train --out "$D/${tag}_$dir" --max-examples "$pairs" \
                --epochs "$epochs" $flags --alignment-head guided \
                --guided-alignment "$links"
    done
    align --run "$D/${tag}_fr_en" --out "$D/${tag}_fr_en.align"
    align --reverse-run "$D/${tag}_en_fr" --out "$D/${tag}_en_fr.align"
    for m in fr_en en_fr; do score "${tag}_$m"; done
    for m in grow-diag-final-and grow-diag intersection; do
        align --run "$D/${tag}_fr_en" --reverse-run "$D/${tag}_en_fr" \
            --symmetrize $m --out "$D/${tag}_$m.align"
        score "${tag}_$m"
        align --run "$D/${tag}_fr_en" --reverse-run "$D/${tag}_en_fr" \
            --symmetrize $m --links threshold --threshold 0.5 \
            --out "$D/${tag}_t0.5_$m.align"
        score "${tag}_t0.5_$m"
    done
    for r in ${tag}_fr_en ${tag}_en_fr; do
        $PY -m examples.nmt evaluate --run "$D/$r" --beam-width 0 \
            --max-examples 1000
    done
done
[ -z "${SKIP_LEXICAL:-}" ] || exit 0
D=$D benchmarks/alignment/seeds.sh lexu --alignment-head lexical
D=$D benchmarks/alignment/seeds.sh lexu_enfr --direction from-english \
    --alignment-head lexical
for s in 0 1 2 3; do
    align --run "$D/seeds/lexu_s$s" --reverse-run "$D/seeds/lexu_enfr_s$s" \
        --out "$D/lexu_sym_s$s.align"
    score "lexu_sym_s$s"
done
for m in grow-diag intersection; do
    align --run "$D/seeds/lexu_s0" --reverse-run "$D/seeds/lexu_enfr_s0" \
        --symmetrize $m --out "$D/lexu_sym_$m.align"
    score "lexu_sym_$m"
done
# Translation without guidance on every pair, against the guided head's.
[ -f "$D/all_fr_en/history.json" ] ||
    train --out "$D/all_fr_en" --max-examples 1000000
$PY -m examples.nmt evaluate --run "$D/all_fr_en" --beam-width 0 \
    --max-examples 1000
fi
