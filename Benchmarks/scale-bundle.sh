#!/usr/bin/env bash
# Packs Benchmarks/scale.sh for a machine with no Swift toolchain and no network (a lent many-core
# machine): the statically linked release binary, Debian's nginx and wrk, every shared library the
# three load and the dynamic loader, into .scale-bundle/ and .scale-bundle.tar.xz (both ignored by
# git). On the other machine (it needs python3 and bash):
#
#   tar -xJf .scale-bundle.tar.xz && cd .scale-bundle && bash run-scale.sh
#
# run-scale.sh runs each program as `lib/ld-linux-x86-64.so.2 --library-path lib bin/X`, so the
# libraries of this machine are used, not the other machine's.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/nginx-peer.sh
need_tools nginx wrk
swift build -c release 2>&1 | tail -n 1
bundle=.scale-bundle
rm -rf "$bundle" && mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/Benchmarks"
cp .build/release/pushswarm "$bundle/bin/"
cp "$(command -v nginx || echo /usr/sbin/nginx)" "$bundle/bin/nginx"
cp "$(command -v wrk)" "$bundle/bin/wrk"
for binary in "$bundle"/bin/*; do
    ldd "$binary" 2>/dev/null | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' | while read -r library; do
        cp -L "$library" "$bundle/lib/"
    done
done
cp -L /lib64/ld-linux-x86-64.so.2 "$bundle/lib/" 2>/dev/null || true
cp Benchmarks/scale.sh Benchmarks/nginx-peer.sh Benchmarks/engine-quickstart.json Benchmarks/open-workload.json Benchmarks/device-path.json "$bundle/Benchmarks/"
cat > "$bundle/run-scale.sh" <<'RUN'
#!/usr/bin/env bash
# Runs Benchmarks/scale.sh with the programs of this bundle, through the bundle's own loader.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
run="$here/lib/ld-linux-x86-64.so.2 --library-path $here/lib"
PUSHSWARM="$run $here/bin/pushswarm" NGINX_BIN="$run $here/bin/nginx" WRK="$run $here/bin/wrk" bash Benchmarks/scale.sh "$@"
RUN
tar -cJf "$bundle.tar.xz" "$bundle"
du -sh "$bundle" "$bundle.tar.xz"
