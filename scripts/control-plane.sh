#!/usr/bin/env bash
# A local Kubernetes control plane for the operator's end-to-end tests:
# etcd, kube-apiserver and kube-controller-manager built from their Go
# modules (scripts/control-plane/go.mod pins the versions), with generated
# certificates, service-account signing keys, RBAC and Node authorisation,
# and helm built beside them. Nothing comes from a release page or a
# container registry: only the Go module proxy.
#
#   scripts/control-plane.sh build         # build once per machine (cached); prints the bin directory
#   scripts/control-plane.sh up [options]  # start on loopback, write kubeconfigs
#   scripts/control-plane.sh env [--dir D] # print `export KUBECONFIG=…` for a shell
#   scripts/control-plane.sh down [--dir D]
#
# Options of `up`:
#   --dir DIR          state directory (default target/control-plane)
#   --pod-gateway IP   an address pods reach the API server on (the node
#                      harness's bridge): the API server also listens and
#                      is advertised there, and its certificate names it
#   --node-name NAME   the node the harness plays (default trellis-node);
#                      gets a client certificate under Node authorisation
#
# Binaries go to ~/.cache/trellis/tools (or $TRELLIS_TOOLS_DIR), keyed by
# a hash of the module files, so a change of version rebuilds them. A cold
# build takes about 12 minutes on 2 cores; the Go caches it used are
# removed afterwards (about 5 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

K8S_VERSION="v1.37.2"
# Bump when the build command below changes, so that caches rebuild.
BUILD_REVISION=3
MODULE_DIR="$ROOT/scripts/control-plane"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"

die() { echo "control-plane: $*" >&2; exit 1; }

module_hash() {
  { cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" "$MODULE_DIR/etcd/main.go"; echo "$BUILD_REVISION"; } \
    | sha256sum | cut -c1-12
}

bin_dir() { echo "$TOOLS/control-plane-$K8S_VERSION-$(module_hash)/bin"; }

BINARIES=(etcd kube-apiserver kube-controller-manager helm)

build() {
  local bin; bin="$(bin_dir)"
  mkdir -p "$TOOLS"
  # One build per machine even when two runs start together.
  exec 9>"$TOOLS/control-plane.lock"
  flock 9
  local missing=0
  for b in "${BINARIES[@]}"; do [[ -x "$bin/$b" ]] || missing=1; done
  if [[ $missing == 0 ]]; then
    echo "$bin"
    return
  fi
  command -v go >/dev/null || die "go is required to build the control plane"
  local work="$TOOLS/control-plane-build"
  rm -rf "$work" "$bin.tmp"
  mkdir -p "$work" "$bin.tmp"
  echo "control-plane: building kube-apiserver, kube-controller-manager, etcd and helm ($K8S_VERSION) into $bin; about 12 minutes on 2 cores" >&2
  local started=$SECONDS
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  (
    cd "$MODULE_DIR"
    export GOCACHE="$work/cache" GOMODCACHE="$work/mod" GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
    # The linker drops the debug information (-s -w), so the compiler does
    # not generate it either: go build only does that by itself for go run
    # and go test. Nor does it inline (-l): that took an eighth of the
    # compile time (measured on client-go and the OpenAPI definitions), and
    # the tests' API server handles a few requests a second.
    go build -trimpath "-gcflags=all=-dwarf=false -l" -ldflags "-s -w \
        -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
        -X k8s.io/component-base/version.gitMajor=1 \
        -X k8s.io/component-base/version.gitMinor=$minor \
        -X k8s.io/component-base/version.gitTreeState=clean" \
      -o "$bin.tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager \
      helm.sh/helm/v3/cmd/helm \
      ./etcd
  ) >&2
  # Module cache files are read-only; let rm through.
  chmod -R u+w "$work" && rm -rf "$work"
  rm -rf "$bin" && mv "$bin.tmp" "$bin"
  echo "control-plane: built in $((SECONDS - started)) s" >&2
  echo "$bin"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# A certificate signed by the cluster CA: name, subject, and (for serving
# certificates) subjectAltName.
issue() {
  local name="$1" subject="$2" san="${3:-}" pki="$DIR/pki"
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  local ext="$pki/$name.ext"
  if [[ -n "$san" ]]; then
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=%s\n' "$san" >"$ext"
  else
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$ext"
  fi
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 30 -sha256 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$ext"
}

kubeconfig() {
  local file="$1" user="$2" server="$3" pki="$DIR/pki"
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $server
    certificate-authority: $pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $pki/$user.crt
    client-key: $pki/$user.key
contexts:
- name: local
  context: {cluster: local, user: $user, namespace: default}
current-context: local
EOF
}

# Starts a process in its own session, its output in DIR/NAME.log, its
# pid in DIR/NAME.pid.
start() {
  local name="$1"; shift
  setsid "$@" >"$DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/$name.pid"
}

wait_until() {
  local what="$1" seconds="$2"; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "control-plane: $what did not come up in $seconds s; last lines of its log:" >&2
      tail -n 30 "$DIR/$what.log" >&2 || true
      return 1
    fi
    sleep 0.5
  done
}

up() {
  local gateway="" node="trellis-node"
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --dir) DIR="$2"; shift 2 ;;
      --pod-gateway) gateway="$2"; shift 2 ;;
      --node-name) node="$2"; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  local bin; bin="$(build)"
  [[ -f "$DIR/kube-apiserver.pid" ]] && down
  rm -rf "$DIR"
  mkdir -p "$DIR/pki" "$DIR/etcd"
  DIR="$(cd "$DIR" && pwd)"
  local started=$SECONDS

  local pki="$DIR/pki"
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=trellis-test-ca" -days 30 -sha256 \
    -out "$pki/ca.crt" 2>/dev/null
  local san="DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1"
  [[ -n "$gateway" ]] && san="$san,IP:$gateway"
  issue apiserver "/CN=kube-apiserver" "$san"
  issue admin "/O=system:masters/CN=trellis-test-admin"
  issue controller-manager "/CN=system:kube-controller-manager"
  issue scheduler "/CN=system:kube-scheduler"
  issue node "/O=system:nodes/CN=system:node:$node"
  # The service-account token signing pair.
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null

  local etcd_port etcd_peer api_port cm_port
  etcd_port="$(free_port)"; etcd_peer="$(free_port)"; api_port="$(free_port)"; cm_port="$(free_port)"
  start etcd "$bin/etcd" --name trellis --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "trellis=http://127.0.0.1:$etcd_peer" \
    --listen-metrics-urls "" --unsafe-no-fsync --log-level warn
  wait_until etcd 30 curl -fsS "http://127.0.0.1:$etcd_port/health"

  # Without a pod gateway the API server is reachable on loopback only,
  # where the `kubernetes` Service cannot point (its endpoints refuse
  # loopback addresses).
  local bind=127.0.0.1 advertise=127.0.0.1 reconciler=none
  if [[ -n "$gateway" ]]; then bind=0.0.0.0; advertise="$gateway"; reconciler=lease; fi
  local issuer="https://kubernetes.default.svc.cluster.local"
  start kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address "$bind" --secure-port "$api_port" --advertise-address "$advertise" \
    --endpoint-reconciler-type "$reconciler" \
    --cert-dir "$DIR/pki" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer "$issuer" --api-audiences "$issuer" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-cluster-ip-range 10.96.0.0/16 --allow-privileged=false --profiling=false
  wait_until kube-apiserver 120 curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$api_port/readyz"

  local server="https://127.0.0.1:$api_port"
  kubeconfig "$DIR/admin.kubeconfig" admin "$server"
  kubeconfig "$DIR/controller-manager.kubeconfig" controller-manager "$server"
  kubeconfig "$DIR/scheduler.kubeconfig" scheduler "$server"
  kubeconfig "$DIR/node.kubeconfig" node "$server"

  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --root-ca-file "$pki/ca.crt" --service-account-private-key-file "$pki/sa.key" \
    --use-service-account-credentials=true --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$cm_port" --cert-dir "$DIR/controller-manager" \
    --profiling=false
  wait_until kube-controller-manager 60 curl -fsSk "https://127.0.0.1:$cm_port/healthz"

  cat >"$DIR/cluster.env" <<EOF
KUBECONFIG=$DIR/admin.kubeconfig
TRELLIS_CP_SERVER=$server
TRELLIS_CP_API_PORT=$api_port
TRELLIS_CP_POD_GATEWAY=$gateway
TRELLIS_CP_NODE=$node
TRELLIS_CP_CA=$pki/ca.crt
TRELLIS_CP_ADMIN_KUBECONFIG=$DIR/admin.kubeconfig
TRELLIS_CP_NODE_KUBECONFIG=$DIR/node.kubeconfig
TRELLIS_CP_SCHEDULER_KUBECONFIG=$DIR/scheduler.kubeconfig
TRELLIS_CP_HELM=$bin/helm
EOF
  echo "control-plane: up in $((SECONDS - started)) s at $server ($DIR)" >&2
}

down() {
  local name pid
  for name in kube-controller-manager kube-apiserver etcd; do
    [[ -f "$DIR/$name.pid" ]] || continue
    pid="$(cat "$DIR/$name.pid")"
    kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    rm -f "$DIR/$name.pid"
  done
}

DIR="${TRELLIS_CONTROL_PLANE_DIR:-$ROOT/target/control-plane}"
cmd="${1:-}"; shift || true
case "$cmd" in
  build) build ;;
  up) up "$@" ;;
  down)
    [[ "${1:-}" == --dir ]] && DIR="$2"
    down ;;
  env)
    [[ "${1:-}" == --dir ]] && DIR="$2"
    [[ -f "$DIR/cluster.env" ]] || die "no control plane at $DIR (run: $0 up)"
    sed 's/^/export /' "$DIR/cluster.env" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
