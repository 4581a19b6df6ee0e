#!/usr/bin/env bash
# Submit a sharded SWORD rebuild to Slurm: a job array of extract shards, then a dependent job for the rest.
#   pipeline/slurm/submit.sh /dumps/wikidata-20240911-all.json.gz /scratch/sword/20240911 16
set -euo pipefail
DUMP=${1:?dump}; RUN=${2:?run directory}; SHARDS=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
SWORD=${SWORD:-$here/../../target/release/sword}
[ -x "$SWORD" ] || { echo "build first: cargo build --release" >&2; exit 2; }
mkdir -p "$RUN"
export SWORD DUMP RUN SHARDS CONF="$here/.."
jid=$(sbatch --parsable --export=ALL --array=0-$((SHARDS - 1)) "$here/extract-shard.sbatch")
echo "extract shards: job array $jid (0..$((SHARDS - 1)))"
rid=$(sbatch --parsable --export=ALL --dependency=afterok:"$jid" "$here/rest.sbatch")
echo "join + remaining stages: job $rid (after $jid)"
