# Sourced by setup.sh and test.sh: BUILD_LAUNCHER, CMake's compiler launcher (a ;-list), is
# ccache when it is installed, else empty. CCACHE_BASEDIR makes the paths under the repository
# relative in what ccache hashes, and CCACHE_NOHASHDIR leaves the working directory out of the
# debug builds' hash, so another clone of the same sources on this machine hits the cache.
BUILD_LAUNCHER=""
if command -v ccache >/dev/null 2>&1; then
  BUILD_LAUNCHER="/usr/bin/env;CCACHE_BASEDIR=$(pwd);CCACHE_NOHASHDIR=true;$(command -v ccache)"
fi
