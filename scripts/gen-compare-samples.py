#!/usr/bin/env python3
"""Generate SWORD samples files (as `sword eval run` writes them) for `sword eval compare`: its benchmark and
its cross-checks. Standard library only.

  scripts/gen-compare-samples.py --out DIR --models 20 --originals 2000 [--seed 7] [--variants plain]

writes DIR/eval/m00/sword/samples.jsonl … (one folder per model, as `make eval` lays them out): every
original with its four distortions (ORG, SS, OS, PSS, POS), each asked in the 8 languages, answered
"True"/"False" (about 2 % without a verdict). Whether an answer is right is drawn with probability
logistic(model + language + strategy + statement difficulty): the statement difficulty is shared by every
model and language, so models (and languages) share errors; ko and ja are 0.6 logits harder, PSS and POS
0.5 logits harder than SS and OS. The lines carry the request's messages and usage, so their size is that
of real samples (≈ 0.5 KB).

`--bad-pairs K` plants K bad translations: K (statement, language) pairs, at most one per statement, drawn
from a generator of their own (so the other answers are the same as with K = 0), that every model answers
wrongly (with a verdict): `eval compare`'s suspect sentences. They are listed in DIR/bad-pairs.tsv.
"""
import argparse
import json
import math
import os
import random

LANGS = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"]
STRATS = ["ORG", "SS", "OS", "PSS", "POS"]
LANG_EFFECT = {"en": 0.4, "fr": 0.2, "de": 0.2, "es": 0.1, "it": 0.1, "pt": 0.0, "ko": -0.6, "ja": -0.6}
STRAT_EFFECT = {"ORG": 0.3, "SS": 0.8, "OS": 0.8, "PSS": 0.3, "POS": 0.3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--originals", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--variants", default="plain")
    ap.add_argument("--bad-pairs", type=int, default=0)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    bad = {}
    pick = random.Random(a.seed + 1)
    while len(bad) < min(a.bad_pairs, a.originals * len(STRATS)):
        o, si = pick.randrange(a.originals), pick.randrange(len(STRATS))
        bad.setdefault((o, si), pick.choice(LANGS))
    if bad:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "bad-pairs.tsv"), "w") as f:
            for (o, si), lang in sorted(bad.items()):
                oid = f"Q{1000 + o}|P31|Q{5000 + o}"
                sid = oid if STRATS[si] == "ORG" else f"{oid}#{STRATS[si]}"
                f.write(f"{sid}\t{lang}\n")
    difficulty = [[rnd.gauss(0.0, 1.0) for _ in STRATS] for _ in range(a.originals)]
    variants = a.variants.split(",")
    for m in range(a.models):
        model = f"m{m:02d}"
        skill = 0.2 + 1.2 * m / max(1, a.models - 1)
        d = os.path.join(a.out, "eval", model, "sword")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "samples.jsonl"), "w") as f:
            for o in range(a.originals):
                oid = f"Q{1000 + o}|P31|Q{5000 + o}"
                for si, s in enumerate(STRATS):
                    sid = oid if s == "ORG" else f"{oid}#{s}"
                    label = s == "ORG"
                    for lang in LANGS:
                        for v in variants:
                            z = skill + LANG_EFFECT[lang] + STRAT_EFFECT[s] - difficulty[o][si]
                            right = rnd.random() < 1.0 / (1.0 + math.exp(-z))
                            verdict = label if right else not label
                            answer = "True" if verdict else "False"
                            if rnd.random() < 0.02:
                                answer = "I cannot tell."
                            if bad.get((o, si)) == lang:
                                answer = "False" if label else "True"
                            text = f"Statement {sid} written in {lang} as a full natural sentence about the triple."
                            meta = {"statement_id": sid, "original_id": oid, "language": lang,
                                    "strategy": s, "label": label}
                            if v != "plain":
                                meta["variant"] = v
                            rec = {"id": f"sword:{sid}:{lang}:{v}", "suite": "sword", "meta": meta,
                                   "messages": [{"role": "user", "content": text + "\nIs the sentence True or False?"}],
                                   "answer": answer,
                                   "usage": {"prompt_tokens": 31, "completion_tokens": 2, "total_tokens": 33},
                                   "model": model}
                            f.write(json.dumps(rec, ensure_ascii=False))
                            f.write("\n")


if __name__ == "__main__":
    main()
