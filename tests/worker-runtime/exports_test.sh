#!/usr/bin/env bash
# libhvdrun exports its API and nothing of its inside: every exported symbol that names hvdrun
# is a function or class of include/hvdrun (elastic.h too), an error class's typeinfo or
# vtable, or a standard template instantiated for an error class; nothing of spdlog, fmt,
# Boost, the ring (hvdrun::tcp), the rendezvous client (hvdrun::rdzv) or NCCL (hvdrun::nccl).
# usage: exports_test.sh LIBHVDRUN
set -uo pipefail
lib=$1
symbols=$(nm -D --defined-only "$lib" | awk '{ $1 = ""; $2 = ""; sub(/^  /, ""); print }' | c++filt)
[ -n "$symbols" ] || { echo "exports_test: no symbols read from $lib" >&2; exit 1; }
api='init|shutdown|is_initialized|rank|size|local_rank|local_size|cross_rank|cross_size|allreduce|allreduce_many|broadcast|allgather|reduce_scatter|barrier|has_gpu_backend|gpu_device|nccl_communicator|element_size|to_string|to_float|to_float16|to_bfloat16'
errors='Error|ErrorKind<hvdrun::[A-Za-z]+Error>|[A-Za-z]+Error|elastic::HostsUpdated|ErrorKind<hvdrun::elastic::HostsUpdated>'
elastic='run|State::(State|~State|add|on_reset|commit|save|restore|sync|resets|reset|check_size)'
bad=$(grep -E 'hvdrun::|spdlog|fmt::|boost::' <<<"$symbols" |
  grep -Ev "^hvdrun::($api)\(" |
  grep -Ev "^hvdrun::elastic::($elastic)\(" |
  grep -Ev "^(typeinfo for |typeinfo name for |vtable for )hvdrun::($errors)$" |
  grep -Ev '^([a-z_]+ )?std::[^(]*<hvdrun::[A-Za-z]+Error>')
if [ -n "$bad" ]; then
  echo "exports_test: $lib exports what is not its API:" >&2
  echo "$bad" >&2
  exit 1
fi
for name in 'hvdrun::init()' 'hvdrun::rank()' 'hvdrun::barrier()' 'typeinfo for hvdrun::Error'; do
  grep -qxF "$name" <<<"$symbols" || { echo "exports_test: $name is not exported" >&2; exit 1; }
done
echo "exports_test: $(wc -l <<<"$symbols") symbols, all of them API"
