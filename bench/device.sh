#!/usr/bin/env bash
# Runs the GPU tests and benchmarks on a lent GPU machine, in one call, from a build made on the
# development machine (the GPU machine has no NetCDF or inih and reaches no package registry):
#   here:   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
#           -DTESSERA_GDAL=OFF (the GPU machine lacks GDAL's many libraries);
#           cmake --build build-gpu -j; copy libinih, libnetcdf, libhdf5_serial(_hl), libsz and
#           libaec into .devlibs/ (git-ignored); bash bench/device-pack.sh (build-dev: the build
#           within the 64 MiB a call carries)
#   there:  mv build-dev build-gpu; bash bench/device.sh
#           [tests|bench|all|gpu-parts|scaling-swe|scaling-lbm|malpasset-gpus|balance|balance-gpus|rmcrt|rmcrt-gpus|buq|buq-gpus|buq-ranks|buq-profile|buq-split|buq-malpasset|buq-5m|buq-circular|malpasset-trace|malpasset-engines|malpasset-first|malpasset-profile|malpasset-split|stop-gpu|memory|lbm-profile|lbm-ab|cell-functions] [CTEST_REGEX]
#           from the checkout's root (carry build-dev, .devlibs)
# The Malpasset grids are in the checkout (examples/malpasset/data). The build's paths are
# absolute (the source directory it was configured from, as CMakeCache.txt records it): where that
# directory is not this checkout, a symbolic link to the checkout is made there. Logs and JSON
# results go to $OUT (or ./device-out).
set -u
what=${1:-all}
only=${2:-}
root=$(pwd)
out=${OUT:-$root/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
build=$root/build-gpu
cache=$build/CMakeCache.txt
if [ ! -f "$cache" ]; then
  echo "no $cache: build build-gpu on the development machine and carry it (see the header)"
  exit 1
fi
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")
[ -n "$src" ] || src=$(sed -n 's/^tessera_SOURCE_DIR:STATIC=//p' "$cache")
if [ -z "$src" ]; then
  echo "$cache names no source directory (CMAKE_HOME_DIRECTORY or tessera_SOURCE_DIR)"
  exit 1
fi
if [ "$src" != "$root" ] && ! [ "$src" -ef "$root" ]; then
  if [ -L "$src" ] || [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")"
    ln -sfn "$root" "$src"
    echo "linked $src -> $root (the source directory build-gpu was configured from)"
  else
    echo "$src (build-gpu's source directory) exists and is not this checkout ($root)"
    exit 1
  fi
fi
T=$build/apps/tessera/tessera
if ldd "$T" | grep 'not found'; then
  echo "missing libraries (above)"
  exit 1
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
gpus=$(nvidia-smi -L | wc -l)
devs=$(seq -s, 0 $((gpus - 1)))
"$T" info
# the commit of the build (written by bench/device-pack.sh), not of the checkout copied here
if [ -f "$build/COMMIT" ]; then
  echo "build of commit $(cat "$build/COMMIT")"
else
  echo "build of an unknown commit (not packed by bench/device-pack.sh)"
fi

if [ "$what" = tests ] || [ "$what" = all ]; then
  # CTEST_JOBS tests at a time (default 1; the tests share the GPUs, which only slows them)
  (cd "$build" && ctest -L gpu ${only:+-R "$only"} --output-on-failure -j"${CTEST_JOBS:-1}") 2>&1 |
    tee "$out/gpu_tests.log"
fi

if [ "$what" = bench ] || [ "$what" = all ]; then
  {
    # one GPU (without --devices a run takes every GPU of the machine)
    for n in 2048 4096 8192; do
      "$T" bench swe --backend cuda --devices 0 --size $n --steps 50 --json "$out/bench_cuda_$n.json"
    done
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 20 --precision double
    # the two engines of stage kernels on the same sizes (auto picks rows from 2048^2 up)
    for kern in tiles rows; do
      for n in 1024 2048 4096; do
        "$T" bench swe --backend cuda --devices 0 --size $n --steps 50 --gpu-kernels $kern
      done
    done
    "$T" bench swe --backend cpu --size 2048 --steps 5
    # Several GPUs: weak scaling with 8192^2 cells per GPU, strong scaling on 16384^2 and
    # 4096^2, in one process (halos copied between the devices) and with one MPI rank per GPU
    # (halos through the chosen transport: NCCL where built in).
    if [ "$gpus" -ge 2 ]; then
      for mode in threads mpi; do
        "$T" bench swe --backend cuda --devices "$devs" --mode $mode --weak --size 8192 \
          --steps 30 --decomposition rows --json "$out/weak_${mode}.json"
        for n in 16384 4096; do
          "$T" bench swe --backend cuda --devices "$devs" --mode $mode --strong --size $n \
            --steps 30 --decomposition rows --json "$out/strong_${n}_${mode}.json"
        done
      done
      "$T" bench swe --backend cuda --devices "$devs" --mode mpi --strong --size 4096 --steps 30 \
        --decomposition rows --transport host
    fi
    # Lattice Boltzmann D3Q19 on one GPU (FluidX3D's benchmark box: cubic, no extensions), fp32
    # and fp16 storage, then split over the GPUs in one process and with one rank per GPU.
    for st in fp32 fp16; do
      for n in 256 384; do
        "$T" bench lbm --backend cuda --lattice D3Q19 --storage $st --size $n --steps 200 \
          --json "$out/lbm_${st}_${n}_1gpu.json"
      done
      if [ "$gpus" -ge 2 ]; then
        for sc in strong weak; do
          "$T" bench lbm --backend cuda --devices "$devs" --$sc --lattice D3Q19 --storage $st \
            --size 256 --steps 200
          mpirun --allow-run-as-root -np "$gpus" "$T" bench lbm --backend cuda --$sc \
            --lattice D3Q19 --storage $st --size 256 --steps 200
        done
      fi
    done
    # Malpasset at 10 m, 4000 s, float, on one GPU; the wall time of the time loop is in summary.json.
    m=$root/examples/malpasset
    d=$m/data
    /usr/bin/time -f "malpasset 10 m total wall %e s" "$T" run "$m/malpasset.ini" --quiet \
      --set parallel.backend=cuda --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz" \
      --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set output.formats=asc \
      --set output.times=4000 --out "$out/malpasset10"
    grep -E '"(steps|wall_s|mcells_per_s|mass_rel_error)"' "$out/malpasset10/summary.json"
  } 2>&1 | tee "$out/bench.log"
fi

# After a change of the shared cell functions (issue 19's CPU loops): the shallow-water GPU
# speed on the bench basin and Malpasset 10 m (GPU 0), and the CPU loops of both builds on this
# machine's cores (the same bits: cpu.kernels_same_bits).
if [ "$what" = cell-functions ]; then
  {
    for prec in float double; do
      "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --precision $prec
    done
    m=$root/examples/malpasset
    d=$m/data
    "$T" run "$m/malpasset.ini" --quiet --set parallel.backend=cuda --set parallel.devices=0 \
      --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz" \
      --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set output.formats=asc \
      --set output.times=4000 --out "$out/malpasset10"
    grep -E '"(steps|wall_s|output_s)"' "$out/malpasset10/summary.json"
    for isa in baseline x86-64-v3 x86-64-v4; do
      TESSERA_CPU_KERNELS=$isa OMP_NUM_THREADS=16 "$T" bench swe --size 2048 --steps 10
      TESSERA_CPU_KERNELS=$isa OMP_NUM_THREADS=16 "$T" bench lbm --size 96 --steps 20
    done
  } 2>&1 | tee "$out/cell_functions.log"
fi

# GPU memory per cell and the largest grid one GPU holds (issue 19): shallow water in float and
# double, lattice Boltzmann D3Q19 in fp32 and fp16 storage, GPU 0.
if [ "$what" = memory ]; then
  {
    for prec in float double; do
      "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 20 --precision $prec \
        --json "$out/memory_swe_$prec.json"
    done
    for st in fp32 fp16; do
      "$T" bench lbm --backend cuda --devices 0 --lattice D3Q19 --storage $st --size 384 \
        --steps 100 --json "$out/memory_lbm_$st.json"
    done
  } 2>&1 | tee "$out/memory.log"
fi

# Where the lattice Boltzmann step's time and bytes go on GPU 0 (issue 19): the FluidX3D box at
# 384^3, fp32 and fp16, each kernel's time, DRAM and L2 bytes, instructions and stalls (Nsight
# Compute on the launches after a warm-up), then the benchmark itself.
if [ "$what" = lbm-profile ]; then
  {
    for st in fp32 fp16; do
      ncu --clock-control none --launch-skip 8 --launch-count 8 --metrics \
gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,\
lts__t_sectors_op_write.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,\
smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_lg_throttle,\
smsp__average_warp_latency_issue_stalled_drain,smsp__average_warp_latency_issue_stalled_membar \
        "$T" bench lbm --backend cuda --devices 0 --lattice D3Q19 --storage $st --size 384 \
        --steps 8 | grep -v "^==PROF==" | head -200
      "$T" bench lbm --backend cuda --devices 0 --lattice D3Q19 --storage $st --size 384 \
        --steps 200 --json "$out/lbm_profile_$st.json"
    done
  } 2>&1 | tee "$out/lbm_profile.log"
fi

# A change of the lattice Boltzmann GPU step against the build before it, in the same call: the
# build before it unpacked in $BASE_BUILD (default build-old), the two runs alternating, twice.
if [ "$what" = lbm-ab ]; then
  base=$root/${BASE_BUILD:-build-old}/apps/tessera/tessera
  {
    for st in fp32 fp16; do
      for n in 256 384; do
        for rep in 1 2; do
          for b in before after; do
            bin=$T
            [ $b = before ] && bin=$base
            echo "== $b $st ${n}^3 run $rep: $("$bin" bench lbm --backend cuda --devices 0 \
              --lattice D3Q19 --storage $st --size $n --steps 200 | grep -A1 MLUPs | tail -1)"
          done
        done
      done
    done
  } 2>&1 | tee "$out/lbm_ab.log"
fi

# Malpasset at 10 m (4000 s, float) on one GPU and on every GPU of the machine: one process with
# subdomains = auto (one per GPU), and one MPI rank per GPU; the wall time of the time loop and
# the devices used are in each summary.json.
if [ "$what" = malpasset-gpus ]; then
  m=$root/examples/malpasset
  d=$m/data
  for run in "1gpu|--set parallel.devices=0" "allgpus|" "mpi|mpirun"; do
    name=${run%%|*}
    args=${run#*|}
    launch=()
    if [ "$args" = mpirun ]; then
      launch=(mpirun --allow-run-as-root -np "$gpus")
      args=""
    fi
    # shellcheck disable=SC2086
    "${launch[@]}" "$T" run "$m/malpasset.ini" --quiet --set parallel.backend=cuda $args \
      --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz" \
      --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set output.formats=asc \
      --set output.times=4000 --out "$out/malpasset10_$name"
    echo "== malpasset 10 m, $name: $(grep -E '"(wall_s|steps|subdomains|ranks)"' \
      "$out/malpasset10_$name/summary.json" | tr -d ' \n')"
    tr -d ' \n' < "$out/malpasset10_$name/summary.json" | grep -o '"devices":\[[^]]*\]'
    echo
  done 2>&1 | tee "$out/malpasset_gpus.log"
  cmp "$out/malpasset10_1gpu/max_h.asc" "$out/malpasset10_allgpus/max_h.asc" &&
    cmp "$out/malpasset10_1gpu/max_h.asc" "$out/malpasset10_mpi/max_h.asc" &&
    echo "max_h.asc: the same bytes on 1 GPU, all GPUs in one process and one rank per GPU"
fi

# Steps on the devices for several GPU parts of one process (issues 19 and 21): their tests,
# then Malpasset 10 m on GPU 0, on every GPU (one process, balance off and static) and one rank
# per GPU, and the wet basin's weak and strong scaling in one process, in one call.
if [ "$what" = gpu-parts ]; then
  (cd "$build" && ctest -L gpu -R "${only:-device_steps|gpu.match|sanitizer\$|sanitizer.device_steps|gpu.mpi\$}" \
    --output-on-failure -j1) 2>&1 | tee "$out/gpu_tests.log"
  bash "$0" malpasset-gpus
  BALANCE_MODES=${BALANCE_MODES:-off,static,dynamic,auto} bash "$0" balance-gpus
  [ -n "${NO_SCALING:-}" ] || {
    "$T" bench swe --backend cuda --devices "$devs" --mode threads --weak --size 8192 \
      --steps 30 --decomposition rows --json "$out/weak_threads.json"
    for n in 16384 4096; do
      "$T" bench swe --backend cuda --devices "$devs" --mode threads --strong --size $n \
        --steps 30 --decomposition rows --json "$out/strong_${n}_threads.json"
    done
  } 2>&1 | tee "$out/scaling_threads.log"
fi

# Load balance on one GPU and its host (issue 16): Malpasset at 10 m (4000 s, float) and the
# circular dam break at 4096^2 on 2 subdomains of GPU 0 and on GPU 0 + the CPU cores, each
# balance mode in one command against the GPU alone; the fully wet basin (8192^2) on GPU 0 alone
# and with the CPU cores (static balance).
if [ "$what" = balance ]; then
  m=$root/examples/malpasset
  d=$m/data
  mal=(--set parallel.backend=cuda --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz"
    --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set output.times=4000)
  {
    "$T" bench balance "$m/malpasset.ini" "${mal[@]}" --set parallel.devices=0 --modes off       --json "$out/balance_1gpu.json"
    "$T" bench balance "$m/malpasset.ini" "${mal[@]}" --set parallel.devices=0,0       --set parallel.decomposition=columns --json "$out/balance_2sub.json"
    "$T" bench balance "$m/malpasset.ini" "${mal[@]}" --set parallel.devices=0,cpu       --set parallel.decomposition=columns --modes static,dynamic,auto       --json "$out/balance_gpu_cpu.json"
    for devs_case in 0 0,cpu; do
      "$T" bench swe --backend cuda --size 8192 --steps 50 --devices $devs_case         --decomposition rows --balance static
    done
    # the study's circular dam break over three bumps at 4096^2 (water in the south: rows), to
    # CIRCULAR_END seconds (default 10)
    c=$root/examples/circular_dambreak
    cend=${CIRCULAR_END:-10}
    sh "$c/make_case.sh" 4096 /tmp/circular4096
    circ=(--set parallel.backend=cuda --set swe.bed=/tmp/circular4096/bed.asc.gz
      --set swe.initial_depth=/tmp/circular4096/depth.asc.gz --set time.end="$cend"
      --set output.times="$cend")
    "$T" bench balance "$c/circular_dambreak.ini" "${circ[@]}" --set parallel.devices=0 --modes off       --json "$out/circular_1gpu.json"
    "$T" bench balance "$c/circular_dambreak.ini" "${circ[@]}" --set parallel.devices=0,0       --set parallel.decomposition=rows --json "$out/circular_2sub.json"
    "$T" bench balance "$c/circular_dambreak.ini" "${circ[@]}" --set parallel.devices=0,cpu       --set parallel.decomposition=rows --modes static,dynamic,auto       --json "$out/circular_gpu_cpu.json"
  } 2>&1 | tee "$out/balance.log"
fi

# Load balance over every GPU (issue 21): Malpasset at 10 m (4000 s, float) split over the GPUs in
# one process, each balance mode (or those in BALANCE_MODES) against GPU 0 alone, in one command.
if [ "$what" = balance-gpus ]; then
  m=$root/examples/malpasset
  d=$m/data
  mal=(--set parallel.backend=cuda --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz"
    --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set output.times=4000)
  "$T" bench balance "$m/malpasset.ini" "${mal[@]}" --set parallel.devices="$devs" \
    ${BALANCE_MODES:+--modes "$BALANCE_MODES"} --json "$out/balance_gpus.json" 2>&1 | tee "$out/balance_gpus.log"
fi

# RMCRT (issue 17): the Burns & Christon medium, 41^3 x 100 rays and 256^3 x 100 rays on GPU 0
# (one level, and two levels with Latin-hypercube directions), 2 patches on it, and 41^3 x 100
# rays on all host cores (the GPU-over-CPU ratio); with BASELINE=PATH (an older tessera) the GPU
# benchmarks run with it first, in the same call. Then the coupled run on the task runtime at
# 128^3 x 100 rays, 4 and 8 patches on GPU 0, with its trace (the GPU's idle fraction is in
# summary.json), and over 2 MPI ranks sharing GPU 0.
if [ "$what" = rmcrt ]; then
  b=$root/examples/burns_christon/burns_christon.ini
  {
    for t in ${BASELINE:-} "$T"; do
      echo "== $t"
      "$t" bench rmcrt --size 41 --rays 100 --backend cuda
      "$t" bench rmcrt --size 40 --rays 100 --backend cuda --levels 2
      "$t" bench rmcrt --size 256 --rays 100 --backend cuda
      "$t" bench rmcrt --size 256 --rays 100 --backend cuda --levels 2 --lhs on
    done
    "$T" bench rmcrt --size 256 --rays 100 --backend cuda --devices 0,0 --patches 2
    OMP_NUM_THREADS=$(nproc) "$T" bench rmcrt --size 41 --rays 100 --backend cpu
    coupled=(--set parallel.backend=cuda --set rmcrt.nx=128 --set rmcrt.rays=100
      --set rmcrt.couple=energy --set rmcrt.steps=8 --set rmcrt.dt=10 --quiet)
    c=/tmp/coupled # (the fields stay there; the traces come back)
    for np in 4 8; do
      "$T" run "$b" "${coupled[@]}" --set parallel.subdomains=$np --out "$c/$np" \
        --trace "$out/coupled_trace_$np.json"
      echo "== coupled 128^3, $np patches: $(grep -E '"(gpu_idle_fraction|trace_s|rays_per_s)"' \
        "$c/$np/summary.json" | tr -d ' \n')"
    done
    mpirun --allow-run-as-root -np 2 "$T" run "$b" "${coupled[@]}" --set parallel.subdomains=8 \
      --out "$c/mpi" --trace "$out/coupled_trace_mpi.json"
    echo "== coupled 128^3, 2 ranks x 4 patches: $(grep -E '"(gpu_idle_fraction|trace_s)"' \
      "$c/mpi/summary.json" | tr -d ' \n')"
    cmp "$c/8/divq.vti" "$c/mpi/divq.vti" &&
      echo "coupled: the same divq.vti on 8 patches of one process and over 2 ranks"
  } 2>&1 | tee "$out/rmcrt.log"
fi

# Quadtree grids (issue 18) on GPU 0: the gpu tests of the block engine; the fully wet basin
# on the uniform grid's engines and on the block engine (one level: throughput per cell; three
# levels refined on the bump); Malpasset at 10 m (4000 s, float) on the uniform grid, on one
# level and on 3 levels refined where the bed is steeper than 5 %, with each run's survey MAE
# (scripts/survey_mae.py) and wall times.
if [ "$what" = buq ]; then
  (cd "$build" && ctest -L gpu -R buq --output-on-failure -j1) 2>&1 | tee "$out/gpu_tests_buq.log"
  {
    for n in 4096 8192; do
      "$T" bench swe --backend cuda --devices 0 --size $n --steps 40
      "$T" bench swe --backend cuda --devices 0 --size $n --steps 40 --grid buq
    done
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --grid buq --block 8
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --grid buq --levels 3
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --precision double
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --precision double --grid buq
    m=$root/examples/malpasset
    d=$m/data
    mal=(--quiet --set parallel.backend=cuda --set parallel.devices=0
      --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz"
      --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set output.formats=asc
      --set output.times=4000)
    for run in "uniform|" "buq1|--set grid.type=buq" \
      "buq3|--set grid.type=buq --set grid.levels=3 --set grid.refine_slope=0.05"; do
      name=${run%%|*}
      # shellcheck disable=SC2086
      /usr/bin/time -f "total %e s" "$T" run "$m/malpasset.ini" "${mal[@]}" ${run#*|} \
        --out "$out/mal_$name" 2>&1 | tail -1
      echo "== malpasset 10 m $name: $(grep -E '"(wall_s|steps|cells)"' \
        "$out/mal_$name/summary.json" | tr -d ' \n') $(python3 "$root/scripts/survey_mae.py" \
        "$out/mal_$name")"
    done
    cmp "$out/mal_uniform/max_h.asc" "$out/mal_buq1/max_h.asc" &&
      echo "malpasset: one level's max_h.asc equals the uniform grid's"
  } 2>&1 | tee "$out/buq.log"
fi

# Quadtree grids over partitions and GPUs (issues 18 and 21): the gpu tests of the block engine
# (partitions on one GPU, on two, over two ranks), the wet basin (the uniform grid, the quadtree
# in 1 partition and in 4 on GPU 0), weak (8192^2 per GPU, one level) and strong (8192^2, one
# level and three) over every GPU in one process; the circular dam break at 4096^2 (0.49 m),
# refined where the water is on 3 levels (1.45 M cells) and on 2 (6.3 M: the study's strong
# case), 10 s on GPU 0, on every GPU in one process (balance auto, then off) and on one rank per
# GPU. buq-ranks: the tests named
# by CTEST_REGEX (default: buq) and the circular dam break on GPU 0 and on the ranks only.
if [ "$what" = buq-gpus ] || [ "$what" = buq-ranks ]; then
  (cd "$build" && ctest -L gpu -R "${only:-buq}" --output-on-failure -j1) 2>&1 |
    tee "$out/gpu_tests_buq.log"
  devs=$(seq -s, 0 $((gpus - 1)))
  {
    if [ "$what" = buq-gpus ] && [ -z "${BUQ_CASES:-}" ]; then
      "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40
      "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --grid buq
      "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --grid buq --subdomains 4
    fi
    if [ "$what" = buq-gpus ] && [ "$gpus" -ge 2 ] && [ -z "${BUQ_CASES:-}" ]; then
      "$T" bench swe --backend cuda --devices "$devs" --weak --size 8192 --steps 30 --grid buq \
        --json "$out/buq_weak.json"
      "$T" bench swe --backend cuda --devices "$devs" --strong --size 8192 --steps 30 --grid buq \
        --json "$out/buq_strong.json"
      "$T" bench swe --backend cuda --devices "$devs" --strong --size 8192 --steps 30 --grid buq \
        --levels 3 --json "$out/buq_strong_3.json"
    fi
    c=/tmp/circ4096
    sh "$root/examples/circular_dambreak/make_case.sh" 4096 $c >/dev/null &&
      cp "$root/examples/circular_dambreak/circular_dambreak.ini" $c/
    common=(--quiet --set grid.type=buq --set grid.refine_slope=0.05 --set time.end=10
      --set output.times=10 --set output.formats=asc --set parallel.backend=cuda)
    # the 3-level grid (1.45 M cells) and the 2-level one of the study's strong case (6.3 M)
    cases=("buq3|--set grid.levels=3 --set grid.refine_water=16"
      "buq2_6m|--set grid.levels=2 --set grid.refine_water=660")
    runs=("gpu0|1|--set parallel.devices=0")
    [ "$what" = buq-gpus ] && runs+=("gpus|1|--set parallel.devices=$devs"
      "gpus_unbalanced|1|--set parallel.devices=$devs --set parallel.balance=off")
    [ "$gpus" -ge 2 ] && runs+=("ranks|$gpus|--set parallel.devices=$devs")
    for case in "${cases[@]}"; do
      IFS='|' read -r grid rules <<<"$case"
      # BUQ_CASES: only these circular cases (buq3, buq2_6m), no benches; BUQ_RUNS: only these runs
      [ -n "${BUQ_CASES:-}" ] && ! echo " $BUQ_CASES " | grep -q " $grid " && continue
      for run in "${runs[@]}"; do
        [ -n "${BUQ_RUNS:-}" ] && ! echo " $BUQ_RUNS " | grep -q " ${run%%|*} " && continue
        IFS='|' read -r name np extra <<<"$run"
        o=$out/circ_${grid}_$name
        # shellcheck disable=SC2086
        mpirun --oversubscribe -np "$np" "$T" run $c/circular_dambreak.ini "${common[@]}" $rules \
          $extra --out "$o" 2>&1 | tail -2
        echo "== circular 4096 $grid $name: $(grep -E \
          '"(wall_s|steps|cells|transport|rebalances|moved_cells|move_seconds|imbalance_.*)"' \
          "$o/summary.json" | tr -d ' \n')"
        [ "$name" = gpu0 ] || { cmp "$out/circ_${grid}_gpu0/max_h.asc" "$o/max_h.asc" &&
          echo "circular 4096 $grid: max_h.asc on $name the same as on GPU 0"; }
      done
    done
  } 2>&1 | tee "$out/buq_gpus.log"
  rm -f "$out"/circ_*/*.asc
fi

# Where a quadtree step's time goes (issue 18): the kernels of a few steps of the wet basin on
# GPU 0 under Nsight Compute (durations only, clocks left alone), one level and three, then the
# uniform grid and the quadtree timed without the profiler in the same call.
if [ "$what" = buq-profile ]; then
  (cd "$build" && ctest -L gpu -R "${only:-gpu.buq$|gpu.sanitizer.buq}" --output-on-failure -j1) 2>&1 |
    tee "$out/gpu_tests_buq.log"
  {
    for lv in 1 3; do
      ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
        "$T" bench swe --backend cuda --devices 0 --size 4096 --steps 4 --grid buq --levels $lv |
        grep -v "^==PROF==" | head -150
    done
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --grid buq
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --grid buq --levels 3
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --grid buq --precision double
    "$T" bench swe --backend cuda --devices 0 --size 8192 --steps 40 --precision double
  } 2>&1 | tee "$out/buq_profile.log"
fi

# Where the quadtree's strong case loses on two GPUs (issues 18 and 21): the circular dam break at
# 4096^2 on 2 levels (6.3 M cells) run on GPU 0 to a checkpoint at BUQ_SPLIT_AT s (an integer,
# default 8),
# then from it for 0.5 s on GPU 0 in one partition and in two, and on both GPUs (balance off and
# dynamic), the steps' time being the loop's less its writing; then a few steps of one GPU and of
# both under Nsight Compute (each kernel's time, per device; about 4 minutes: BUQ_SPLIT_NCU=0
# skips it).
if [ "$what" = buq-split ]; then
  (cd "$build" && ctest -L gpu -R "${only:-gpu.buq}" --output-on-failure -j1) 2>&1 |
    tee "$out/gpu_tests_buq.log"
  c=/tmp/circ${BUQ_SPLIT_SIZE:-4096} at=${BUQ_SPLIT_AT:-8}
  sh "$root/examples/circular_dambreak/make_case.sh" "${BUQ_SPLIT_SIZE:-4096}" $c >/dev/null &&
    cp "$root/examples/circular_dambreak/circular_dambreak.ini" $c/
  common=(--quiet --set grid.type=buq --set grid.refine_slope=0.05 --set grid.levels=2
    --set grid.refine_water=660 --set output.times=100 --set output.formats=asc
    --set parallel.backend=cuda)
  {
    "$T" run $c/circular_dambreak.ini "${common[@]}" --set time.end="$at.2" \
      --set output.checkpoint_interval="$at" --set parallel.devices=0 --out /tmp/split_start
    ck=$(ls /tmp/split_start/checkpoint_*.tsc | head -1)
    for run in "gpu0|--set parallel.devices=0" \
      "gpu0_two_parts|--set parallel.devices=0 --set parallel.subdomains=2 --set parallel.balance=off" \
      "gpus|--set parallel.devices=0,1 --set parallel.balance=off" \
      "gpus_balanced|--set parallel.devices=0,1 --set parallel.balance=dynamic"; do
      IFS='|' read -r name extra <<<"$run"
      # shellcheck disable=SC2086
      "$T" run $c/circular_dambreak.ini "${common[@]}" --set time.end="$at.5" \
        --restart "$ck" $extra --out "$out/split_$name"
      python3 -c "import json,sys; s=json.load(open(sys.argv[1])); b=s.get('balance',{}); print('== %s: %d steps, %.3f s of steps (%.3f ms a step), moves %s (%s s), imbalance %s -> %s' % (sys.argv[2], s['steps'], s['wall_s'] - s['output_s'], 1e3 * (s['wall_s'] - s['output_s']) / max(1, s['steps']), b.get('rebalances'), b.get('move_seconds'), b.get('imbalance_before'), b.get('imbalance_after')))" \
        "$out/split_$name/summary.json" "$name"
    done
    for devs in 0 0,1; do
      [ "${BUQ_SPLIT_NCU:-1}" = 0 ] && break
      ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
        "$T" run $c/circular_dambreak.ini "${common[@]}" --set time.end="$at.006" \
        --restart "$ck" --set parallel.devices=$devs --set parallel.balance=off \
        --out /tmp/split_ncu 2>&1 | grep -v "^==PROF==" | grep -E "^  [a-z_]|k_|Device|gpu__time|void" |
        cut -c1-160 | head -120
      grep -E '"steps"' /tmp/split_ncu/summary.json
    done
  } 2>&1 | tee "$out/buq_split.log"
  rm -f "$out"/split_*/*.asc
fi

# Malpasset 10 m on a one-level quadtree (issue 18), GPU 0: steps on the device (one partition)
# against steps the host drives (two partitions), the same bytes; and against the uniform grid,
# snapshot by snapshot (every 250 s), the first time their depths differ.
if [ "$what" = buq-malpasset ]; then
  m=$root/examples/malpasset
  d=$m/data
  mal=(--quiet --set parallel.backend=cuda --set parallel.devices=0
    --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz"
    --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set output.formats=asc
    --set output.times=250,500,750,1000,1250,1500,1750,2000,2500,3000,3500,4000)
  {
    for run in "one|--set grid.type=buq" \
      "two|--set grid.type=buq --set parallel.subdomains=2 --set parallel.balance=off" \
      "uniform|"; do
      # shellcheck disable=SC2086
      "$T" run "$m/malpasset.ini" "${mal[@]}" ${run#*|} --out "$out/malbuq_${run%%|*}"
      echo "== malpasset 10 m, ${run%%|*}: $(grep -E '"(wall_s|steps)"' \
        "$out/malbuq_${run%%|*}/summary.json" | tr -d ' \n')"
    done
    cmp "$out/malbuq_one/max_h.asc" "$out/malbuq_two/max_h.asc" &&
      cmp "$out/malbuq_one/gauges.csv" "$out/malbuq_two/gauges.csv" &&
      echo "malpasset quadtree: device steps and host-driven steps write the same bytes"
    for f in "$out"/malbuq_uniform/h_t*.asc "$out"/malbuq_uniform/max_h.asc; do
      cmp "$f" "$out/malbuq_one/$(basename "$f")" >/dev/null && echo "same: $(basename "$f")" ||
        { echo "differ: $(basename "$f") $(cmp "$f" "$out/malbuq_one/$(basename "$f")")"; break; }
    done
  } 2>&1 | tee "$out/buq_malpasset.log"
  rm -f "$out"/malbuq_*/*.asc
fi

# Malpasset 10 m to 3500 s on the CPU (every core), on GPU 0 and on one quadtree level on GPU 0:
# the depths at 3000 and 3500 s compared byte for byte, the GPUs' gzipped into $OUT (issue 18).
if [ "$what" = malpasset-trace ]; then
  m=$root/examples/malpasset
  d=$m/data
  for run in "gpu|--set parallel.backend=cuda --set parallel.devices=0" \
    "buq|--set parallel.backend=cuda --set parallel.devices=0 --set grid.type=buq" \
    "cpu|--set parallel.backend=cpu"; do
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$(nproc) "$T" run "$m/malpasset.ini" --quiet --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz" \
      --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set output.formats=asc \
      --set time.end=3500 --set output.times=3000,3500 ${run#*|} --out "$out/trace_${run%%|*}"
    echo "== malpasset 10 m to 3500 s, ${run%%|*}: $(grep -E '"(wall_s|steps)"' \
      "$out/trace_${run%%|*}/summary.json" | tr -d ' \n')"
  done 2>&1 | tee "$out/malpasset_trace.log"
  for f in h_t003000 hu_t003000 h_t003500 hu_t003500 max_h; do
    for run in gpu buq; do
      cmp "$out/trace_cpu/$f.asc" "$out/trace_$run/$f.asc" >/dev/null && echo "same: cpu, $run $f" ||
        echo "differ: cpu, $run $f"
    done
  done 2>&1 | tee -a "$out/malpasset_trace.log"
  for run in gpu buq cpu; do
    gzip "$out/trace_$run/h_t003500.asc" && mv "$out/trace_$run/h_t003500.asc.gz" "$out/${run}_h_t003500.asc.gz"
  done
  rm -rf "$out"/trace_*
fi

# The uniform grid's GPU engines on Malpasset 10 m to 3500 s against one quadtree level on GPU 0
# (which equals the CPU there, malpasset-trace): early exit off, two subdomains (steps driven by
# the host), the row engine; where each run's depths at 3500 s differ (issue 18).
if [ "$what" = malpasset-engines ]; then
  m=$root/examples/malpasset
  d=$m/data
  for run in "buq|--set grid.type=buq" "tiles|" "noexit|--set parallel.early_exit=off" \
    "two|--set parallel.subdomains=2" "rows|--set parallel.gpu_kernels=rows"; do
    # shellcheck disable=SC2086
    "$T" run "$m/malpasset.ini" --quiet --set parallel.backend=cuda --set parallel.devices=0 \
      --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz" --set output.formats=asc \
      --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set time.end=3500 \
      --set output.times=3000,3500 ${run#*|} --out "$out/eng_${run%%|*}"
    echo "== ${run%%|*}: $(grep -E '"(wall_s|steps)"' "$out/eng_${run%%|*}/summary.json" | tr -d ' \n')"
    [ "${run%%|*}" = buq ] ||
      python3 "$root/scripts/asc_diff.py" "$out/eng_buq/h_t003500.asc" "$out/eng_${run%%|*}/h_t003500.asc"
  done 2>&1 | tee "$out/malpasset_engines.log"
  rm -rf "$out"/eng_*
fi

# Where the uniform grid's GPU engines first depart from the CPU on Malpasset 10 m: a checkpoint
# at 3000 s from GPU 0 (the CPU's bytes there, malpasset-trace), then 3000 to 3500 s from it on
# GPU 0 and on the CPU with the depths and discharges every 10 s; the first time they differ
# and its cells (issue 18).
if [ "$what" = malpasset-first ]; then
  m=$root/examples/malpasset
  d=$m/data
  mal=(--quiet --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz" --set output.formats=asc
    --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz")
  "$T" run "$m/malpasset.ini" "${mal[@]}" --set parallel.backend=cuda --set parallel.devices=0 \
    --set time.end=3001 --set output.times=3000 --set output.checkpoint_interval=3000 \
    --out "$out/first_start"
  times=$(seq -s, 3010 10 3500)
  for run in "gpu|--set parallel.backend=cuda --set parallel.devices=0" \
    "cpu|--set parallel.backend=cpu"; do
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$(nproc) "$T" run "$m/malpasset.ini" "${mal[@]}" ${run#*|} \
      --restart "$out/first_start/checkpoint_t003000.tsc" --set time.end=3500 \
      --set output.times="$times" --out "$out/first_${run%%|*}"
  done
  for t in $(seq 3010 10 3500); do
    f=$(printf "%06d" "$t")
    for q in h hu hv; do
      if ! cmp -s "$out/first_cpu/${q}_t$f.asc" "$out/first_gpu/${q}_t$f.asc"; then
        echo "first difference at t = $t s, $q (cpu, then gpu):"
        python3 "$root/scripts/asc_diff.py" "$out/first_cpu/${q}_t$f.asc" "$out/first_gpu/${q}_t$f.asc"
        found=1
      fi
    done
    [ -n "${found:-}" ] && break
  done 2>&1 | tee "$out/malpasset_first.log"
  rm -rf "$out"/first_*
fi

# Where a Malpasset 10 m step's time goes at the flood's widest (issue 21's 1.7x): a checkpoint
# at 3000 s from GPU 0; from it to 3500 s on GPU 0 and on every GPU in one process (balance off),
# wall times in the loop; then 3000 to 3002 s under Nsight Compute (each kernel's duration, one
# GPU and two): the sum of kernel time per step against the step's wall time.
if [ "$what" = malpasset-profile ]; then
  m=$root/examples/malpasset
  d=$m/data
  mal=(--quiet --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz" --set output.formats=asc
    --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set parallel.backend=cuda)
  "$T" run "$m/malpasset.ini" "${mal[@]}" --set parallel.devices=0 --set time.end=3001 \
    --set output.times=3000 --set output.checkpoint_interval=3000 --out /tmp/prof_start
  ck=/tmp/prof_start/checkpoint_t003000.tsc
  {
    for run in "1gpu|--set parallel.devices=0" "allgpus|--set parallel.devices=$devs --set parallel.balance=off"; do
      # shellcheck disable=SC2086
      "$T" run "$m/malpasset.ini" "${mal[@]}" ${run#*|} --restart $ck --set time.end=3500 \
        --set output.times=3500 --out "/tmp/prof_${run%%|*}"
      echo "== malpasset 10 m 3000-3500 s, ${run%%|*}: $(grep -E '"(wall_s|steps)"' \
        "/tmp/prof_${run%%|*}/summary.json" | tr -d ' \n')"
    done
    cmp /tmp/prof_1gpu/max_h.asc /tmp/prof_allgpus/max_h.asc && echo "the same max_h.asc"
    for run in "1gpu|--set parallel.devices=0" "allgpus|--set parallel.devices=$devs --set parallel.balance=off"; do
      echo "== kernels, 3000-3002 s, ${run%%|*}"
      # shellcheck disable=SC2086
      ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
        "$T" run "$m/malpasset.ini" "${mal[@]}" ${run#*|} --restart $ck --set time.end=3002 \
        --set output.times=3002 --out "/tmp/prof_ncu_${run%%|*}" |
        grep -E "^  [a-zA-Z_]|gpu__time_duration|invocations" | cut -c1-160
      grep -E '"steps"' "/tmp/prof_ncu_${run%%|*}/summary.json"
    done
  } 2>&1 | tee "$out/malpasset_profile.log"
fi

# Malpasset 10 m, 4000 s, float, one output time: how the split over two GPUs costs (issue 21's
# 1.7x): GPU 0; two parts on GPU 0 (the split without peer copies); both GPUs split into columns
# (the halo a column: strided copies) and into rows (contiguous); and the default (balance auto).
# Each run's loop time, the part of it spent writing, steps; the max_h.asc of each against GPU 0's.
if [ "$what" = malpasset-split ]; then
  m=$root/examples/malpasset
  d=$m/data
  mal=(--quiet --set swe.bed="$d/malpasset_dem_10m_nodata.asc.gz" --set output.formats=asc
    --set swe.initial_surface="$d/malpasset_eta0_10m.asc.gz" --set parallel.backend=cuda
    --set output.times=4000)
  {
    for run in "1gpu|--set parallel.devices=0" \
      "1gpu_2parts|--set parallel.devices=0 --set parallel.subdomains=2 --set parallel.balance=off" \
      "2gpus_columns|--set parallel.devices=$devs --set parallel.balance=off --set parallel.decomposition=columns" \
      "2gpus_rows|--set parallel.devices=$devs --set parallel.balance=off --set parallel.decomposition=rows" \
      "2gpus_auto|--set parallel.devices=$devs" ${SPLIT_RUNS:-}; do
      # shellcheck disable=SC2086
      "$T" run "$m/malpasset.ini" "${mal[@]}" ${run#*|} --out "/tmp/split_${run%%|*}"
      echo "== malpasset 10 m, ${run%%|*}: $(grep -E '"(wall_s|output_s|steps)"' \
        "/tmp/split_${run%%|*}/summary.json" | tr -d ' \n')"
      cmp -s /tmp/split_1gpu/max_h.asc "/tmp/split_${run%%|*}/max_h.asc" || echo "max_h.asc differs from GPU 0's"
    done
  } 2>&1 | tee "$out/malpasset_split.log"
fi

# The stop on a signal with the GPU backend (issue 22): the lattice Boltzmann stop and restart of
# tests/stop/stop.sh on GPU 0 and on two ranks with a GPU each (a longer run: GPU steps are fast).
if [ "$what" = stop-gpu ]; then
  for mode in lbm lbm-mpi; do
    TESSERA_BACKEND=cuda LBM_STOP_STEPS=400000 bash "$root/tests/stop/stop.sh" "$T" \
      "$root/examples/cavity2d/cavity2d.ini" "/tmp/stop_$mode" $mode
    echo "== stop.sh $mode on the GPU: exit $?"
  done 2>&1 | tee "$out/stop_gpu.log"
fi

# The 1.45 M-cell circular dam break of buq-gpus on GPU 0 (issue 18): steps on the device (one
# partition) against steps the host drives (two partitions), then the kernels of two steps about
# step 2000 under Nsight Compute (durations only).
if [ "$what" = buq-circular ]; then
  c=/tmp/circ4096
  sh "$root/examples/circular_dambreak/make_case.sh" 4096 $c >/dev/null &&
    cp "$root/examples/circular_dambreak/circular_dambreak.ini" $c/
  circ=(--quiet --set grid.type=buq --set grid.refine_slope=0.05 --set time.end=10
    --set output.times=10 --set output.formats=asc --set parallel.backend=cuda
    --set parallel.devices=0 --set grid.levels=3 --set grid.refine_water=16)
  {
    for run in "one|" "two|--set parallel.subdomains=2 --set parallel.balance=off" \
      "one_no_exit|--set parallel.early_exit=off"; do
      # shellcheck disable=SC2086
      "$T" run $c/circular_dambreak.ini "${circ[@]}" ${run#*|} --out "$out/circ_${run%%|*}"
      echo "== circular 4096, 3 levels, ${run%%|*}: $(grep -E '"(wall_s|steps)"' \
        "$out/circ_${run%%|*}/summary.json" | tr -d ' \n')"
    done
    cmp "$out/circ_one/max_h.asc" "$out/circ_two/max_h.asc" && echo "circular: the same max_h.asc"
    ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip 20000 \
      --launch-count 56 --print-summary per-kernel "$T" run $c/circular_dambreak.ini \
      "${circ[@]}" --set time.end=5 --set output.times=5 --out /tmp/circ_prof |
      grep -E "^  [a-z]|gpu__time_duration" | sed 's/(swe_buq_view.*) (/ (/'
  } 2>&1 | tee "$out/buq_circular.log"
  rm -f "$out"/circ_*/*.asc
fi

# Malpasset on 5 m cells (issue 18's time to the same accuracy; the grids of
# examples/malpasset/make_5m.sh in examples/malpasset/data/5m, carried along): the uniform grid,
# the quadtree of 4 levels (5 to 40 m) refined where a 10 m run's flood reached (when make_5m.sh
# was given a flood map), and refined where the bed is steeper than 5 % (blocks of 16, and of 8);
# GPU 0, 4000 s, float; each run's wall times, cells, survey MAE and arrival times against the
# uniform grid's.
if [ "$what" = buq-5m ]; then
  m=$root/examples/malpasset
  d=$m/data/5m
  mal=(--quiet --set parallel.backend=cuda --set parallel.devices=0
    --set swe.bed="$d/malpasset_dem_5m_nodata.asc.gz"
    --set swe.initial_surface="$d/malpasset_eta0_5m.asc.gz" --set output.formats=asc
    --set output.times=4000)
  {
    for run in "uniform|" \
      "flood|--set grid.type=buq --set grid.levels=4 --set grid.refine=$d/malpasset_refine_5m.asc.gz" \
      "slope|--set grid.type=buq --set grid.levels=4 --set grid.refine_slope=0.05" \
      "slope8|--set grid.type=buq --set grid.block=8 --set grid.levels=4 --set grid.refine_slope=0.05"; do
      name=${run%%|*}
      # (the flood-refined grid needs make_5m.sh's refinement raster)
      [ "$name" = flood ] && [ ! -f "$d/malpasset_refine_5m.asc.gz" ] && continue
      # shellcheck disable=SC2086
      /usr/bin/time -f "total %e s" "$T" run "$m/malpasset.ini" "${mal[@]}" ${run#*|} \
        --out "$out/mal5_$name" 2>&1 | tail -1
      echo "== malpasset 5 m $name: $(grep -E '"(wall_s|steps|cells)"' \
        "$out/mal5_$name/summary.json" | tr -d ' \n')"
      python3 "$root/scripts/survey_mae.py" "$out/mal5_$name" --against "$out/mal5_uniform"
    done
    # the uniform 10 m grid against the uniform 5 m one
    "$T" run "$m/malpasset.ini" --quiet --set parallel.backend=cuda --set parallel.devices=0 \
      --set swe.bed="$m/data/malpasset_dem_10m_nodata.asc.gz" --set output.formats=asc \
      --set swe.initial_surface="$m/data/malpasset_eta0_10m.asc.gz" --set output.times=4000 \
      --out "$out/mal5_ten"
    echo "== malpasset 10 m uniform: $(grep -E '"(wall_s|steps)"' "$out/mal5_ten/summary.json" |
      tr -d ' \n')"
    python3 "$root/scripts/survey_mae.py" "$out/mal5_ten" --against "$out/mal5_uniform"
  } 2>&1 | tee "$out/buq_5m.log"
  rm -f "$out"/mal5_*/*_t*.asc "$out"/mal5_*/h*.asc "$out"/mal5_*/max_[hs]*.asc \
    "$out"/mal5_*/duration.asc
fi

# Malpasset at 5 m with grids drawn from a pilot run (issue 18's time to accuracy): the uniform 5 m
# grid, the uniform 10 m grid as the pilot (its flood and wave speeds), then quadtrees whose 5 m
# cells carry no faster waves than S m/s with flooded flat land at F m, for each S:F of BUQ_GRIDS
# (scripts/refine_from_run.py), each against the uniform 5 m grid: survey MAE and arrival times.
# BUQ_BACKEND=cpu runs the same on the host's cores (OMP_NUM_THREADS).
if [ "$what" = buq-5m-pilot ]; then
  m=$root/examples/malpasset
  d=$m/data/5m
  backend=${BUQ_BACKEND:-cuda}
  mal=(--quiet --set parallel.backend="$backend" --set output.formats=asc --set output.times=4000)
  [ "$backend" = cuda ] && mal+=(--set parallel.devices=0)
  five=(--set swe.bed="$d/malpasset_dem_5m_nodata.asc.gz"
    --set swe.initial_surface="$d/malpasset_eta0_5m.asc.gz")
  since() { python3 -c "import sys, time; print('%.2f' % (time.time() - int(sys.argv[1]) / 1e9))" "$1"; }
  took() { # took NAME: the summary's wall, output time and steps, and the time in all
    echo "== $1: in all $2 s, $(grep -E '"(wall_s|output_s|steps|cells)"' \
      "$out/$1/summary.json" | tr -d ' \n')"
  }
  {
    start=$(date +%s%N)
    "$T" run "$m/malpasset.ini" "${mal[@]}" "${five[@]}" --out "$out/p5_uniform"
    took p5_uniform "$(since "$start")"
    python3 "$root/scripts/survey_mae.py" "$out/p5_uniform"
    start=$(date +%s%N)
    "$T" run "$m/malpasset.ini" "${mal[@]}" --set swe.bed="$m/data/malpasset_dem_10m_nodata.asc.gz" \
      --set swe.initial_surface="$m/data/malpasset_eta0_10m.asc.gz" --out "$out/p5_pilot"
    took p5_pilot "$(since "$start")"
    python3 "$root/scripts/survey_mae.py" "$out/p5_pilot" --against "$out/p5_uniform"
    for g in ${BUQ_GRIDS:-14:20 10:20 7:20 10:10}; do
      s=${g%%:*} name=p5_s${g%%:*}_f${g#*:}
      python3 "$root/scripts/refine_from_run.py" "$out/p5_pilot" \
        "$m/data/malpasset_dem_10m_nodata.asc.gz" "$out/refine.asc.gz" --cell 5 \
        --flat "${g#*:}" --speed "$s"
      start=$(date +%s%N)
      "$T" run "$m/malpasset.ini" "${mal[@]}" "${five[@]}" --set grid.type=buq \
        --set grid.levels=4 --set grid.refine="$out/refine.asc.gz" --out "$out/$name"
      took "$name" "$(since "$start")"
      python3 "$root/scripts/survey_mae.py" "$out/$name" --against "$out/p5_uniform"
    done
  } 2>&1 | tee "$out/buq_5m_pilot.log"
  rm -f "$out"/p5_*/*_t*.asc "$out"/p5_*/h*.asc "$out"/p5_*/max_[hs]*.asc "$out"/p5_*/duration.asc \
    "$out"/refine.asc.gz
fi

# RMCRT over the GPUs (issue 21): 256^3 x 100 rays on GPU 0 and on every GPU (one host thread per
# GPU), one level and two levels; the coupled 128^3 run with 8 patches over every GPU, with its
# trace, against the same run on GPU 0 (the same divq.vti bytes).
if [ "$what" = rmcrt-gpus ]; then
  b=$root/examples/burns_christon/burns_christon.ini
  {
    for d in 0 "$devs"; do
      "$T" bench rmcrt --size 256 --rays 100 --backend cuda --devices "$d"
      "$T" bench rmcrt --size 256 --rays 100 --backend cuda --levels 2 --lhs on --devices "$d"
    done
    coupled=(--set parallel.backend=cuda --set rmcrt.nx=128 --set rmcrt.rays=100
      --set rmcrt.couple=energy --set rmcrt.steps=8 --set rmcrt.dt=10 --quiet
      --set parallel.subdomains=8)
    c=/tmp/coupled_gpus
    for d in 0 "$devs"; do
      "$T" run "$b" "${coupled[@]}" --set parallel.devices="$d" --out "$c/${d//,/_}" \
        --trace "$out/coupled_trace_${d//,/_}.json"
      echo "== coupled 128^3, 8 patches, devices $d: $(grep -E \
        '"(gpu_idle_fraction|trace_s|wall_s)"' "$c/${d//,/_}/summary.json" | tr -d ' \n')"
    done
    cmp "$c/0/divq.vti" "$c/${devs//,/_}/divq.vti" &&
      echo "coupled: the same divq.vti on GPU 0 and on devices $devs"
  } 2>&1 | tee "$out/rmcrt_gpus.log"
fi

# Scaling over 1, 2, 4 and 8 GPUs (as many as the machine has), each count against one GPU in the
# same command. Shallow water: weak (8192^2 per GPU) and strong (16384^2 and 4096^2), one process and one
# rank per GPU, rows (1D) and tiles (2D). Lattice Boltzmann D3Q19, fp32 and fp16: weak (256^3
# per GPU) and strong (256^3), 1D (bands along z), 2D and 3D tiles, one process and one rank per
# GPU. Two commands, so that each stays within a device call's time limit. SWE_MODES and SWE_DECS
# narrow the shallow-water runs (default: "threads mpi" and "rows tiles").
counts=""
for k in 2 4 8; do [ "$k" -le "$gpus" ] && counts="$counts $k"; done
if [ "$what" = scaling-swe ]; then
  for k in $counts; do
    devs=$(seq -s, 0 $((k - 1)))
    for mode in ${SWE_MODES:-threads mpi}; do
      for dec in ${SWE_DECS:-rows tiles}; do
        "$T" bench swe --backend cuda --devices "$devs" --mode $mode --weak --size 8192 \
          --steps 30 --decomposition $dec --json "$out/swe_weak_${k}_${mode}_${dec}.json"
        for n in 16384 4096; do
          "$T" bench swe --backend cuda --devices "$devs" --mode $mode --strong --size $n \
            --steps 30 --decomposition $dec --json "$out/swe_strong_${n}_${k}_${mode}_${dec}.json"
        done
      done
    done
  done 2>&1 | tee "$out/scaling_swe.log"
fi
if [ "$what" = scaling-lbm ]; then
  for k in $counts; do
    devs=$(seq -s, 0 $((k - 1)))
    case $k in 2) decs="1x1x2" ;; 4) decs="1x1x4 2x2x1" ;; *) decs="1x1x8 4x2x1 2x2x2" ;; esac
    for st in fp32 fp16; do
      for dec in $decs; do
        for sc in weak strong; do
          "$T" bench lbm --backend cuda --devices "$devs" --$sc --lattice D3Q19 --storage $st \
            --size 256 --steps 100 --decomposition $dec
          mpirun --allow-run-as-root -np "$k" "$T" bench lbm --backend cuda --$sc \
            --lattice D3Q19 --storage $st --size 256 --steps 100 --decomposition $dec
        done
      done
    done
  done 2>&1 | tee "$out/scaling_lbm.log"
fi
