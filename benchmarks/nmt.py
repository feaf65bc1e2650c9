"""NMT throughput (placeholder, replaced below)."""


def run_nmt(config, log=print):
    return {"skipped": "not written yet"}
