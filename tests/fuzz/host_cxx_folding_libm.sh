#!/usr/bin/env bash
# A host compiler (WIDEFUSE_HOST_CXX) that drops the -fno-builtin-<f> flags, so GCC folds libm
# calls on constants again: the *_of_a_constant_folded.wf regressions must fail under it.
args=()
for arg in "$@"; do
  case "$arg" in -fno-builtin-*) ;; *) args+=("$arg") ;; esac
done
exec "${WIDEFUSE_REAL_CXX:-c++}" "${args[@]}"
