#!/usr/bin/env bash
# One call of the device tool: run the named parts side by side on the H200, each working under
# $WORK/PART/, then print a short summary of each and pack $WORK into $OUT/${PACK:-parts}.tgz (the device
# tool brings back at most 8 files). Parts that use the GPU take the device lock for
# every measured phase, so they interleave without sharing a measurement.
#
#   bash benchmarks/h200_run.sh [--limit SECONDS] PART...
#
# Parts:
#   eval        red-team/honest cases named in $EVAL_ONLY (all CUDA cases if empty; none if
#               EVAL_CORPORA=0) + repeatability ($EVAL_REPEAT runs of one case per level)
#   optimize    `cudal1 optimize` with the replay policy on $OPT_TASKS (default L2_1)
#   audit       `cudal1 bench` of CUDA-L1's H100 release, calibrated tolerance (resumes $AUDIT_DIR;
#               $AUDIT_TASKS: only these task ids, e.g. to check entries a change concerns)
#   audit-kb    the same with --tolerance kernelbench ($AUDIT_KB_JOBS workers, default $AUDIT_JOBS)
#   grpo        stage 1 (augment, replay teacher) -> SFT -> stage 3 GRPO on the tiny model
#   curve       up to $CURVE_STEPS steps (default 25) of the learning curve's arms in $CURVE_ARM,
#               the held-out evaluation at each multiple of 25, while CURVE_ARGS' --budget-s lasts
#               (default contrastive; several run side by side, e.g. "contrastive plain
#               untrained"; $CURVE_ARGS adds options): TRL's wheels from .whl, the model joined
#               from the parts carried in .model (benchmarks/parts.py, stashed by earlier calls
#               too), the arms' states from the tree ($CURVE_STATE, committed: a new checkout has
#               no ignored files); each arm's state leaves packed directly under $OUT
#   memory      host memory an honest GPU candidate process holds, by the counters of the
#               sandbox's ceiling (benchmarks/host_memory.py)
#   module-id   whether two extensions built with one nvcc module id each compute their own
#               result in one process (benchmarks/module_id_probe.py)
#   host-prefix the host compile of honest CUDA candidates behind the precompiled host prefix,
#               against the driver alone ($HP_LIMIT candidates, default 4; benchmarks/host_prefix.py)
#   stash       keep the parts carried in .model under /tmp/model-parts, where `curve` joins
#               them: the model's parts and TRL's wheels exceed one call's carry, so a warm
#               machine collects them over consecutive calls (each call's carry replaces the
#               last's in the tree, never in the stash)
#   throughput  candidates/hour, pool against one at a time (run alone: it measures idle time);
#               $TP_GPUS spreads the pool over that many GPUs, $TP_BACKEND=ray uses Ray actors
#               (carry Ray's wheel in .whl), e.g. TP_GPUS=4 TP_SEQUENTIAL=0 for the multi-GPU run
# Every part is interrupted (SIGINT, as Ctrl-C) at --limit seconds (default 480); the audits
# continue with --resume on the next call: on a machine still warm from the last call they find
# their directories under $WORK; on a fresh one they start from the carried copies named in
# $AUDIT_FROM and $AUDIT_KB_FROM (e.g. .device_data/audit, unpacked from the last call's pack).
# The audits and the curve need CUDAL1_COMMIT (the commit of the tree carried): the device's
# copy has no git history to name it (its evaluations would name an older commit), and
# `cudal1 bench` resumes only rows made by the same version.
set -u
LIMIT=480
if [ "${1:-}" = "--limit" ]; then LIMIT=$2; shift 2; fi
: "${OUT:?set OUT to the output directory}"
export PYTHONPATH=$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}
export TORCH_CUDA_ARCH_LIST=9.0 PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-4}
CUDA_L1=.device_data/cuda-l1-h100.jsonl
CURVE_STATE=${CURVE_STATE:-benchmarks/results/2026-12-06-h100/learning-curve/state}
WORK=${WORK:-/tmp/h200-work}
AUDIT_DIR=${AUDIT_DIR:-$WORK/audit}
AUDIT_KB_DIR=${AUDIT_KB_DIR:-$WORK/audit-kb}
case " $* " in
  *" audit "*|*" audit-kb "*|*" curve "*) : "${CUDAL1_COMMIT:?set CUDAL1_COMMIT to the commit of the carried tree}" ;;
esac
mkdir -p "$OUT" "$WORK"
for pair in "$AUDIT_DIR:${AUDIT_FROM:-}" "$AUDIT_KB_DIR:${AUDIT_KB_FROM:-}"; do
  dir=${pair%%:*} from=${pair#*:}
  if [ -n "$from" ] && [ ! -f "$dir/results.jsonl" ] && [ -f "$from/results.jsonl" ]; then
    mkdir -p "$dir" && cp "$from"/results.jsonl "$from"/run.json "$dir"/
  fi
done
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader >"$WORK/gpu.txt"

wheels() {
  if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PYTHONPATH
  fi
}

stash_parts() {  # the parts carried in .model this call, beside earlier calls'
  mkdir -p /tmp/model-parts
  [ -d .model ] && cp .model/* /tmp/model-parts/
  return 0
}

part() {
  case $1 in
    eval)
      timeout -s INT -k 20 "$LIMIT" python3 benchmarks/evaluator_h200.py --out "$WORK/eval" --device cuda --jobs 4 \
        --repeat "${EVAL_REPEAT:-5}" ${EVAL_ONLY:+--only "$EVAL_ONLY"} ${REPEAT_CASES:+--repeat-cases "$REPEAT_CASES"} \
        $([ "${EVAL_CORPORA:-1}" = 0 ] && echo --skip-corpora) ;;
    optimize)
      timeout -s INT -k 20 "$LIMIT" python3 benchmarks/optimize_h200.py --out "$WORK/optimize" --tasks "${OPT_TASKS:-L2_1}" ;;
    audit)
      timeout -s INT -k 20 "$LIMIT" python3 -m cudal1 bench "$CUDA_L1" --solutions "$CUDA_L1" --device cuda \
        --out "$AUDIT_DIR" --resume --jobs "${AUDIT_JOBS:-4}" ${AUDIT_TASKS:+--tasks "$AUDIT_TASKS"} ;;
    audit-kb)
      timeout -s INT -k 20 "$LIMIT" python3 -m cudal1 bench "$CUDA_L1" --solutions "$CUDA_L1" --device cuda \
        --tolerance kernelbench --out "$AUDIT_KB_DIR" --resume --jobs "${AUDIT_KB_JOBS:-${AUDIT_JOBS:-4}}" ;;
    grpo)
      # TRL and datasets are not on the machine: carry `.whl` with trl, datasets, dill,
      # multiprocess and fsspec, but not pyarrow (datasets fails to pickle with pyarrow 26;
      # the machine's own 25.0.1 works).
      wheels
      timeout -s INT -k 20 "$LIMIT" python3 benchmarks/train_pipeline.py --out "$WORK/grpo" --device cuda \
        --steps "${GRPO_STEPS:-4}" ;;
    throughput)
      [ "${TP_BACKEND:-local}" = ray ] && wheels
      timeout -s INT -k 20 "$LIMIT" python3 benchmarks/throughput.py --out "$WORK/throughput" --device cuda \
        --count "${TP_COUNT:-20}" --sequential "${TP_SEQUENTIAL:-8}" --jobs "${TP_JOBS:-8}" \
        --backend "${TP_BACKEND:-local}" ${TP_GPUS:+--gpus "$TP_GPUS"} ;;
    curve)
      wheels
      stash_parts
      [ -f /tmp/smollm2.gguf ] || python3 benchmarks/parts.py join --parts /tmp/model-parts \
        --to /tmp/smollm2.gguf || return 1
      # an arm already under /tmp/curve-state (a machine still warm) keeps its own state
      python3 benchmarks/learning_curve.py --state /tmp/curve-state --unpack "$CURVE_STATE" || return 1
      # what the host and the GPU were doing, every 10 s: load average, GPU use and memory
      (while sleep 10; do echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)" \
        "$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)"; done \
        >"$WORK/curve/load.txt") &
      sampler=$!
      arms=()
      for arm in ${CURVE_ARM:-contrastive}; do  # several arms run side by side
        # each arm's state comes back as its manifest and one part (8 files at most come back)
        timeout -s INT -k 20 "$LIMIT" python3 benchmarks/learning_curve.py --state /tmp/curve-state \
          --arm "$arm" --model /tmp/smollm2.gguf --device cuda --steps "${CURVE_STEPS:-25}" \
          --pack "$OUT" ${CURVE_ARGS:-} >"$WORK/curve/$arm.log" 2>&1 &
        arms+=($!)
      done
      wait "${arms[@]}"
      kill "$sampler"
      for arm in ${CURVE_ARM:-contrastive}; do
        mkdir -p "$WORK/curve/$arm" && cp /tmp/curve-state/"$arm"/*.jsonl "$WORK/curve/$arm/"
        echo "--- $arm"; tail -n 12 "$WORK/curve/$arm.log"
      done ;;
    memory)
      timeout -s INT -k 20 "$LIMIT" python3 benchmarks/host_memory.py --out "$WORK/memory" ;;
    module-id)
      timeout -s INT -k 20 "$LIMIT" python3 benchmarks/module_id_probe.py --out "$WORK/module-id" ;;
    host-prefix)
      timeout -s INT -k 20 "$LIMIT" python3 benchmarks/host_prefix.py --out "$WORK/host-prefix" \
        --limit "${HP_LIMIT:-4}" --repeat 2 ;;
    stash)
      stash_parts && ls -la /tmp/model-parts ;;
    *) echo "unknown part $1" >&2; return 2 ;;
  esac
}

start=$(date +%s)
for p in "$@"; do
  mkdir -p "$WORK/$p"
  (part "$p" >"$WORK/$p/log.txt" 2>&1; echo "exit $? after $(( $(date +%s) - start )) s" >>"$WORK/$p/log.txt") &
done
wait

for p in "$@"; do
  echo "=================== $p"
  case $p in
    audit|audit-kb)
      dir=$([ "$p" = audit ] && echo "$AUDIT_DIR" || echo "$AUDIT_KB_DIR")
      python3 -m cudal1 report "$dir" >/dev/null 2>&1
      python3 - "$dir" <<'EOF'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
st = collections.Counter(
    (r.get("result") or {}).get("status")
    or ("no submission" if r.get("error") == "no submission" else "error")
    for r in rows
)
print(len(rows), "entries:", dict(st))
why = collections.Counter(
    (r["result"]["reasons"] or ["-"])[0].split(":")[0][:40]
    for r in rows if (r.get("result") or {}).get("status") == "rejected"
)
errors = collections.Counter(
    r["error"][:60] for r in rows if r.get("error") and r["error"] != "no submission"
)
print("rejected by first reason:", dict(why.most_common(6)))
print("errors:", dict(errors.most_common(4)))
phases = collections.Counter()
for r in rows:
    phases.update((r.get("result") or {}).get("phase_seconds") or {})
print("phase seconds summed:", {k: round(phases[k]) for k in ("device", "device_wait", "built_off_device", "total")})
tools = collections.Counter(
    t for r in rows for t in ((r.get("result") or {}).get("env") or {}).get("built_off_device_by", [])
)
print("tools of off-device builds (rows):", dict(tools.most_common(8)))
measuring = collections.Counter()
for r in rows:
    measuring.update(r.get("measure_seconds") or {})
print("baseline measurements, seconds summed:", {k: round(v) for k, v in measuring.items()})
EOF
      tail -n 2 "$WORK/$p/log.txt" ;;
    *) tail -n 40 "$WORK/$p/log.txt" ;;
  esac
done

tar czf "$OUT/${PACK:-parts}.tgz" -C "$WORK" --exclude='*.bin' --exclude='checkpoint-*' --exclude='*.safetensors' .
ls -la "$OUT"
