#!/usr/bin/env bash
# Output throughput: RANKS workers (bench/output_bench write) each print LINES lines of BYTES
# bytes through a launcher into one pipe, whose reader (bench/output_bench read) checks every
# line (whole, under its own rank's prefix, in order) and times the stream from its first byte
# to its last line.
# Tools, interleaved run by run so that all see the same machine load:
#   pipe     one process writes all the lines straight into the reader (the floor)
#   hvdrun   every line prefixed [rank]<stdout>:
#   mpirun   --tag-output, the same prefix (when Open MPI is installed)
#   torchrun --tee 3, its prefixed console copy (when python3-torch is installed; PEERS names
#            the folder of torchrun311.py, default ../shared/peers)
# Prints per tool the median [min max] MB/s of the workers' bytes (prefixes not counted), the
# lines that were torn, missing, out of order or mislabelled, summed over the runs, and
# hvdrun's ratio to each peer's median.
# usage: bench/output.sh [build_dir=build] [runs=5] [ranks=4] [lines=250000] [bytes=100]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
ranks=${3:-4}
lines=${4:-250000}
bytes=${5:-100}
here=$(cd "$(dirname "$0")" && pwd)
peers=${PEERS:-$(cd "$here/../.." && pwd)/shared/peers}
hvdrun="$build/hvdrun"
bench="$build/bench/output_bench"
for f in "$hvdrun" "$bench"; do
  [ -x "$f" ] || { echo "output.sh: $f not built" >&2; exit 1; }
done
tools=(pipe hvdrun)
command -v mpirun > /dev/null 2>&1 && tools+=(mpirun)
if [ -f "$peers/torchrun311.py" ] && /usr/bin/python3 -c 'import torch.distributed' 2> /dev/null; then
  tools+=(torchrun)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The tool's launch of `output_bench write LINES BYTES` on RANKS workers, stdout only.
launch() {
  case $1 in
    pipe) RANK=0 "$bench" write $((ranks * lines)) "$bytes" ;;
    hvdrun) "$hvdrun" -np "$ranks" "$bench" write "$lines" "$bytes" 2> /dev/null ;;
    mpirun)
      mpirun --allow-run-as-root --oversubscribe --tag-output -np "$ranks" \
        "$bench" write "$lines" "$bytes" 2> /dev/null
      ;;
    torchrun)
      /usr/bin/python3 "$peers/torchrun311.py" --standalone --nproc_per_node="$ranks" \
        --no_python --tee 3 --log_dir "$tmp/torchrun_logs" \
        "$bench" write "$lines" "$bytes" 2> /dev/null
      ;;
  esac
}

for ((r = 0; r < runs; r++)); do
  for tool in "${tools[@]}"; do
    check_ranks=$ranks
    check_lines=$lines
    [ "$tool" = pipe ] && check_ranks=1 && check_lines=$((ranks * lines))
    # The reader exits 1 on a bad line: that is reported, not fatal.
    { launch "$tool" || true; } | { "$bench" read "$check_ranks" "$check_lines" "$bytes" || true; } \
      >> "$tmp/$tool"
    rm -rf "$tmp/torchrun_logs"
  done
done

/usr/bin/python3 - "$tmp" "$ranks" "$lines" "$bytes" "${tools[@]}" <<'PY'
import statistics, sys
tmp, ranks, lines, size, tools = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rows = {}
for tool in tools:
    rows[tool] = []
    for line in open(f"{tmp}/{tool}"):
        w = line.split()
        rows[tool].append(dict(zip(w[0::2], map(float, w[1::2]))))
    if not rows[tool]:
        print(f"  {tool}: not measured (its reader reported nothing)")
tools = [t for t in tools if rows[t]]
if "hvdrun" not in tools:
    sys.exit(1)
print(f"# {ranks} ranks x {lines} lines of {size} bytes, {len(rows['hvdrun'])} runs: MB/s of "
      "the workers' bytes, median [min max]; bad lines summed over the runs")
medians = {}
for tool in tools:
    v = sorted(r["mb_per_s"] for r in rows[tool])
    medians[tool] = statistics.median(v)
    bad = {k: int(sum(r[k] for r in rows[tool]))
           for k in ("torn", "missing", "out_of_order", "mislabelled")}
    print("  %-9s %8.1f [%7.1f %7.1f] MB/s   torn %d  missing %d  out of order %d  "
          "mislabelled %d" % (tool, medians[tool], v[0], v[-1], bad["torn"], bad["missing"],
                              bad["out_of_order"], bad["mislabelled"]))
for tool in tools:
    if tool != "hvdrun" and medians[tool] > 0:
        print("  hvdrun / %s: %.2f" % (tool, medians["hvdrun"] / medians[tool]))
PY
