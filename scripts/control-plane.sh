#!/usr/bin/env bash
# A local Kubernetes cluster for the operator's end-to-end tests: etcd,
# kube-apiserver, kube-controller-manager and kube-scheduler, and nodes of
# kubelet, containerd and runc with the standard CNI plugins, beside an
# OCI registry with TLS and a password. Everything Go is built from one
# module (scripts/control-plane/go.mod pins the versions), so the
# packages the commands share compile once; runc and the CNI plugins are
# Debian's; the sandbox ("pause") image is compiled from the pause.c of
# the same k8s.io/kubernetes module. Certificates, service-account
# signing keys, RBAC and Node authorisation are generated. Nothing comes
# from a release page or a container registry.
#
#   scripts/control-plane.sh build         # build once per machine (cached); prints the bin directory
#   scripts/control-plane.sh install-node-tools  # Debian's runc, CNI plugins, nftables, and the
#                                          # image tools (debootstrap, umoci, skopeo), if missing
#   scripts/control-plane.sh up [options]  # start on loopback, write kubeconfigs
#   scripts/control-plane.sh env [--dir D] # print `export KUBECONFIG=…` for a shell
#   scripts/control-plane.sh down [--dir D]
#
# Options of `up`:
#   --dir DIR          state directory (default target/control-plane)
#   --pod-gateway IP   an address of the caller's network namespace that
#                      pods reach the API server on: the API server also
#                      listens and is advertised there, its certificate
#                      names it, and the nodes use it as their InternalIP
#   --node NAME        start a node (repeatable): containerd and a kubelet
#                      with its own root, ports, cgroup root and pod subnet
#                      (10.244.N.0/24 for the Nth); needs root and
#                      --pod-gateway, on which kube-proxy serves Services
#   --labels L         labels of the last --node (k=v,k2=v2)
#   --taints T         taints of the last --node (k=v:NoSchedule,...)
#   --registry         start an OCI registry on loopback with TLS from the
#                      cluster CA and a password, which the nodes trust
#
# The nodes share the caller's network namespace (give each test run one
# of its own) and the machine's cgroup hierarchy, under /trellis-NAME.
#
# Binaries go to ~/.cache/trellis/tools (or $TRELLIS_TOOLS_DIR), keyed by
# a hash of the module files, so a change of version rebuilds them. A cold
# build takes about 13 CPU-minutes (7 minutes alone on 2 cores); the Go
# caches it used are removed afterwards (about 5 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

K8S_VERSION="v1.37.2"
# Bump when the build command below changes, so that caches rebuild.
BUILD_REVISION=4
MODULE_DIR="$ROOT/scripts/control-plane"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"

die() { echo "control-plane: $*" >&2; exit 1; }

module_hash() {
  { cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" "$MODULE_DIR/etcd/main.go"; echo "$BUILD_REVISION"; } \
    | sha256sum | cut -c1-12
}

bin_dir() { echo "$TOOLS/control-plane-$K8S_VERSION-$(module_hash)/bin"; }

BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
  containerd containerd-shim-runc-v2 ctr registry helm pause)
# What the nodes take from Debian.
DEBIAN_TOOLS=(/usr/sbin/runc /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback
  /usr/lib/cni/portmap /usr/sbin/nft)
# What scripts/image.sh and the suite's push take from Debian.
IMAGE_TOOLS=(debootstrap umoci skopeo)
# The sandbox image's name on every node (imported, never pulled).
PAUSE_IMAGE="trellis.test/pause:3.10"

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
  echo "control-plane: building the control plane, kubelet, kube-proxy, containerd, the registry and helm ($K8S_VERSION) into $bin; about 7 minutes on 2 cores" >&2
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
      k8s.io/kubernetes/cmd/kube-scheduler \
      k8s.io/kubernetes/cmd/kubelet \
      k8s.io/kubernetes/cmd/kube-proxy \
      github.com/containerd/containerd/v2/cmd/containerd \
      github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
      github.com/containerd/containerd/v2/cmd/ctr \
      github.com/distribution/distribution/v3/cmd/registry \
      helm.sh/helm/v3/cmd/helm \
      ./etcd
    # The sandbox's one process, Kubernetes' own pause.c, static.
    local pause_src
    pause_src="$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
    cc -Os -static -DVERSION="$K8S_VERSION" -o "$bin.tmp/pause" "$pause_src"
  ) >&2
  # Module cache files are read-only; let rm through.
  chmod -R u+w "$work" && rm -rf "$work"
  rm -rf "$bin" && mv "$bin.tmp" "$bin"
  echo "control-plane: built in $((SECONDS - started)) s" >&2
  echo "$bin"
}

install_node_tools() {
  local missing=0 tool
  for tool in "${DEBIAN_TOOLS[@]}"; do [[ -x "$tool" ]] || missing=1; done
  for tool in "${IMAGE_TOOLS[@]}"; do command -v "$tool" >/dev/null || missing=1; done
  ((missing)) || return 0
  [[ $(id -u) -eq 0 ]] || die "installing the node tools needs root (apt-get)"
  echo "control-plane: installing runc, the CNI plugins, nftables, debootstrap, umoci and skopeo from Debian" >&2
  # One apt-get at a time on the machine (the browser tests install too).
  flock /var/lib/dpkg/trellis-apt.lock apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive flock /var/lib/dpkg/trellis-apt.lock \
    apt-get install -y -qq runc containernetworking-plugins nftables debootstrap umoci skopeo >/dev/null
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
  local gateway="" registry=0
  local -a nodes=() labels=() taints=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --dir) DIR="$2"; shift 2 ;;
      --pod-gateway) gateway="$2"; shift 2 ;;
      --node) nodes+=("$2"); labels+=(""); taints+=(""); shift 2 ;;
      --labels) ((${#nodes[@]})) || die "--labels before any --node"; labels[-1]="$2"; shift 2 ;;
      --taints) ((${#nodes[@]})) || die "--taints before any --node"; taints[-1]="$2"; shift 2 ;;
      --registry) registry=1; shift ;;
      *) die "unknown option $1" ;;
    esac
  done
  if ((${#nodes[@]})); then
    [[ -n "$gateway" ]] || die "nodes need --pod-gateway (the address pods reach the API server on)"
    [[ $(id -u) -eq 0 ]] || die "nodes need root (containerd, runc, cgroups, CNI)"
    local tool
    for tool in "${DEBIAN_TOOLS[@]}"; do
      [[ -x "$tool" ]] || die "nodes need $tool (apt-get install runc containernetworking-plugins nftables)"
    done
  fi
  local bin; bin="$(build)"
  BIN="$bin"
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
  issue kube-proxy "/CN=system:kube-proxy"
  local node
  for node in "${nodes[@]}"; do
    issue "node-$node" "/O=system:nodes/CN=system:node:$node"
  done
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
    --service-cluster-ip-range 10.96.0.0/16 --allow-privileged=false --profiling=false \
    --kubelet-preferred-address-types InternalIP,Hostname
  wait_until kube-apiserver 120 curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$api_port/readyz"

  local server="https://127.0.0.1:$api_port"
  SERVER="$server"
  GATEWAY_IP="$gateway"
  kubeconfig "$DIR/admin.kubeconfig" admin "$server"
  kubeconfig "$DIR/controller-manager.kubeconfig" controller-manager "$server"
  kubeconfig "$DIR/scheduler.kubeconfig" scheduler "$server"
  kubeconfig "$DIR/kube-proxy.kubeconfig" kube-proxy "$server"
  for node in "${nodes[@]}"; do
    kubeconfig "$DIR/node-$node.kubeconfig" "node-$node" "$server"
  done

  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --root-ca-file "$pki/ca.crt" --service-account-private-key-file "$pki/sa.key" \
    --use-service-account-credentials=true --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$cm_port" --cert-dir "$DIR/controller-manager" \
    --profiling=false
  wait_until kube-controller-manager 60 curl -fsSk "https://127.0.0.1:$cm_port/healthz"

  local sched_port; sched_port="$(free_port)"
  start kube-scheduler "$bin/kube-scheduler" \
    --kubeconfig "$DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig "$DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig "$DIR/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port "$sched_port" \
    --cert-dir "$DIR/scheduler" --profiling=false
  wait_until kube-scheduler 60 curl -fsSk "https://127.0.0.1:$sched_port/healthz"

  cat >"$DIR/cluster.env" <<EOF
KUBECONFIG=$DIR/admin.kubeconfig
TRELLIS_CP_SERVER=$server
TRELLIS_CP_API_PORT=$api_port
TRELLIS_CP_POD_GATEWAY=$gateway
TRELLIS_CP_CA=$pki/ca.crt
TRELLIS_CP_ADMIN_KUBECONFIG=$DIR/admin.kubeconfig
TRELLIS_CP_SCHEDULER_KUBECONFIG=$DIR/scheduler.kubeconfig
TRELLIS_CP_HELM=$bin/helm
TRELLIS_CP_BIN=$bin
EOF
  ((registry)) && start_registry
  if ((${#nodes[@]})); then
    local i
    for i in "${!nodes[@]}"; do
      start_node "$((i + 1))" "${nodes[$i]}" "${labels[$i]}" "${taints[$i]}"
    done
    start_kube_proxy "${nodes[0]}"
    echo "TRELLIS_CP_NODES=${nodes[*]}" >>"$DIR/cluster.env"
    echo "TRELLIS_CP_VERSIONS=$(versions)" >>"$DIR/cluster.env"
  fi
  echo "control-plane: up in $((SECONDS - started)) s at $server ($DIR)" >&2
}

# --- the registry -------------------------------------------------------------

# The reference registry (distribution) on loopback: TLS from the cluster
# CA, one user with a random password (bcrypt, as its htpasswd wants).
start_registry() {
  local port; port="$(free_port)"
  local dir="$DIR/registry" password
  mkdir -p "$dir/data"
  issue registry "/CN=trellis-test-registry" "IP:127.0.0.1,DNS:localhost"
  password="$(openssl rand -hex 16)"
  python3 -W ignore -c 'import crypt, sys; print("trellis:" + crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
    "$password" >"$dir/htpasswd"
  cat >"$dir/config.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $dir/data}, delete: {enabled: true}}
http:
  addr: 127.0.0.1:$port
  tls: {certificate: $DIR/pki/registry.crt, key: $DIR/pki/registry.key}
auth:
  htpasswd: {realm: trellis-test, path: $dir/htpasswd}
EOF
  start registry "$BIN/registry" serve "$dir/config.yml"
  wait_until registry 30 curl -fsS -o /dev/null -w '%{http_code}' --cacert "$DIR/pki/ca.crt" \
    -u "trellis:$password" "https://127.0.0.1:$port/v2/"
  cat >>"$DIR/cluster.env" <<EOF
TRELLIS_CP_REGISTRY=127.0.0.1:$port
TRELLIS_CP_REGISTRY_USER=trellis
TRELLIS_CP_REGISTRY_PASSWORD=$password
EOF
  REGISTRY="127.0.0.1:$port"
}

# --- nodes ---------------------------------------------------------------------

# What the nodes run, for the test log: "kubelet vX, containerd vY, runc vZ".
versions() {
  local kubelet containerd runc
  kubelet="$("$BIN/kubelet" --version | awk '{print $2}')"
  containerd="$("$BIN/containerd" --version | awk '{print $3}')"
  runc="$(runc --version | awk 'NR == 1 {print $3}')"
  echo "kubelet $kubelet, containerd v${containerd%%+*}, runc v${runc%%+*}"
}

# A cgroup of every v1 hierarchy (cpuset's inherits its parent's CPUs and
# memory nodes, which a new cpuset lacks), or of the v2 hierarchy.
make_cgroup() {
  local name="$1" hierarchy
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    mkdir -p "/sys/fs/cgroup/$name"
    return
  fi
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -d "$hierarchy" && ! -L "${hierarchy%/}" ]] || continue
    [[ "$hierarchy" == */unified/ ]] && continue
    mkdir -p "$hierarchy$name"
    if [[ -f "${hierarchy}cpuset.cpus" ]]; then
      cat "${hierarchy}cpuset.cpus" >"$hierarchy$name/cpuset.cpus"
      cat "${hierarchy}cpuset.mems" >"$hierarchy$name/cpuset.mems"
    fi
  done
}

# Removes a cgroup made by make_cgroup, deepest first (the kubelet's
# kubepods tree below it), once its processes are gone.
remove_cgroup() {
  local name="$1" hierarchy
  for hierarchy in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [[ -d "$hierarchy$name" ]] || continue
    find "$hierarchy$name" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

# Node N: containerd (its own root, state, socket and CNI network, the
# pause image imported) and a kubelet (its own root, ports, pod log
# directory and cgroup root), registered with LABELS and TAINTS.
start_node() {
  local index="$1" name="$2" labels="$3" taints="$4"
  local nd="$DIR/nodes/$name"
  mkdir -p "$nd/containerd" "$nd/cni" "$nd/kubelet" "$nd/pods" "$nd/certs.d"
  local subnet="10.244.$index.0/24" bridge="trellis-n$index"
  cat >"$nd/cni/10-trellis.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "trellis-$name",
  "plugins": [
    {
      "type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]],
               "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$nd/ipam"}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  if [[ -n "${REGISTRY:-}" ]]; then
    mkdir -p "$nd/certs.d/$REGISTRY"
    cat >"$nd/certs.d/$REGISTRY/hosts.toml" <<EOF
server = "https://$REGISTRY"
[host."https://$REGISTRY"]
  capabilities = ["pull", "resolve"]
  ca = "$DIR/pki/ca.crt"
EOF
  fi
  local sock="$nd/containerd/containerd.sock"
  # NRI is off: two containerd on one machine would share its socket.
  cat >"$nd/containerd/config.toml" <<EOF
version = 3
root = "$nd/containerd/root"
state = "$nd/containerd/state"
disabled_plugins = ["io.containerd.nri.v1.nri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$PAUSE_IMAGE"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$nd/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  # The machine may withhold CAP_SYS_RESOURCE (a sandboxed CI runner does):
  # then no process may lower its OOM score below containerd's own, and
  # runc fails on the kubelet's -998 for a sandbox. This keeps the
  # kubelet's scores at or above containerd's, as in a user namespace.
  restrict_oom_score_adj = true
  # Pod network namespaces pinned under this node's state, not the
  # machine's /var/run/netns, so that the script's down finds and removes them.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "$nd/containerd/runc"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$nd/cni"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
  start "containerd-$name" env PATH="$BIN:$PATH" "$BIN/containerd" --config "$nd/containerd/config.toml"
  wait_until "containerd-$name" 30 test -S "$sock"
  import_pause "$sock"

  local cgroup_root="/kubelet-$name"
  remove_cgroup "$cgroup_root"
  make_cgroup "$cgroup_root"
  echo "$cgroup_root" >"$nd/cgroup-root"
  local port healthz
  port="$(free_port)"; healthz="$(free_port)"
  local taint_list=""
  if [[ -n "$taints" ]]; then
    local taint key rest value effect
    IFS=',' read -ra taint_list_items <<<"$taints"
    taint_list="registerWithTaints:"
    for taint in "${taint_list_items[@]}"; do
      key="${taint%%=*}"; rest="${taint#*=}"; value="${rest%%:*}"; effect="${rest#*:}"
      taint_list+=$'\n'"- {key: \"$key\", value: \"$value\", effect: $effect}"
    done
  fi
  # cgroup v1 is refused by default from Kubernetes 1.35; evictions are off
  # (a shared CI disk must not evict the suite's pods), as is the swap check.
  cat >"$nd/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: $cgroup_root
containerRuntimeEndpoint: unix://$sock
address: $GATEWAY_IP
port: $port
healthzBindAddress: 127.0.0.1
healthzPort: $healthz
readOnlyPort: 0
podLogsDir: $nd/pods
staticPodPath: ""
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization: {mode: Webhook}
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
resolvConf: /etc/resolv.conf
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
$taint_list
EOF
  start "kubelet-$name" "$BIN/kubelet" \
    --config "$nd/kubelet/config.yaml" \
    --kubeconfig "$DIR/node-$name.kubeconfig" \
    --root-dir "$nd/kubelet" --cert-dir "$nd/kubelet/pki" \
    --hostname-override "$name" --node-ip "$GATEWAY_IP" \
    ${labels:+--node-labels "$labels"}
  wait_until "kubelet-$name" 60 curl -fsS "http://127.0.0.1:$healthz/healthz"
  wait_until "kubelet-$name" 60 kubectl_ready "$name"
}

# The pause image, from its binary, imported under PAUSE_IMAGE.
import_pause() {
  local sock="$1" layout="$DIR/pause-image"
  if [[ ! -f "$DIR/pause.tar" ]]; then
    rm -rf "$layout" && mkdir -p "$layout/rootfs"
    python3 - "$BIN/pause" "$DIR/pause.tar" <<'PY'
import hashlib, io, json, sys, tarfile
binary, out = sys.argv[1:]
def blob(data, media, blobs):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media, "digest": digest, "size": len(data)}
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w") as t:
    info = t.gettarinfo(binary, arcname="pause")
    info.uid = info.gid = 0; info.uname = info.gname = ""; info.mtime = 0; info.mode = 0o755
    with open(binary, "rb") as f:
        t.addfile(info, f)
layer = layer.getvalue()
blobs = {}
config = json.dumps({
    "architecture": "amd64", "os": "linux",
    "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
}).encode()
manifest = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": blob(config, "application/vnd.oci.image.config.v1+json", blobs),
    "layers": [blob(layer, "application/vnd.oci.image.layer.v1.tar", blobs)],
}).encode()
entry = blob(manifest, "application/vnd.oci.image.manifest.v1+json", blobs)
entry["platform"] = {"architecture": "amd64", "os": "linux"}
entry["annotations"] = {"io.containerd.image.name": "trellis.test/pause:3.10",
                        "org.opencontainers.image.ref.name": "3.10"}
index = json.dumps({"schemaVersion": 2, "manifests": [entry]}).encode()
with tarfile.open(out, "w") as t:
    def add(name, data):
        info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
    add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
    add("index.json", index)
    for digest, data in blobs.items():
        add("blobs/sha256/" + digest.split(":")[1], data)
PY
  fi
  "$BIN/ctr" --address "$sock" -n k8s.io images import --no-unpack=false "$DIR/pause.tar" >/dev/null
}

kubectl_ready() {
  local name="$1"
  curl -fsS --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" \
    "$SERVER/api/v1/nodes/$name" | tr -d " \n" | grep -q '"type":"Ready","status":"True"'
}

# One kube-proxy for the network namespace the nodes share: Services
# (the API server's among them) reach their endpoints through its
# nftables rules.
start_kube_proxy() {
  local node="$1" healthz metrics
  healthz="$(free_port)"; metrics="$(free_port)"
  cat >"$DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $DIR/kube-proxy.kubeconfig}
mode: nftables
hostnameOverride: $node
clusterCIDR: 10.244.0.0/16
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:$healthz
metricsBindAddress: 127.0.0.1:$metrics
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  start kube-proxy env PATH="$PATH:/usr/sbin" "$BIN/kube-proxy" --config "$DIR/kube-proxy.yaml"
  wait_until kube-proxy 60 curl -fsS "http://127.0.0.1:$healthz/healthz"
}

down() {
  local name pid
  local -a names=(kube-proxy)
  if [[ -d "$DIR/nodes" ]]; then
    for name in "$DIR"/nodes/*/; do
      name="$(basename "$name")"
      names+=("kubelet-$name" "containerd-$name")
    done
  fi
  names+=(registry kube-scheduler kube-controller-manager kube-apiserver etcd)
  for name in "${names[@]}"; do
    [[ -f "$DIR/$name.pid" ]] || continue
    pid="$(cat "$DIR/$name.pid")"
    kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    rm -f "$DIR/$name.pid"
  done
  stop_node_leftovers
}

# What outlives a node's kubelet and containerd: the shims, the pods'
# processes (in the node's cgroup root), their mounts and cgroups.
stop_node_leftovers() {
  [[ -d "$DIR/nodes" ]] || return 0
  local nd root pid
  for nd in "$DIR"/nodes/*/; do
    nd="${nd%/}"
    pkill -KILL -f "containerd-shim-runc-v2 .*-address $nd/containerd/containerd.sock" 2>/dev/null || true
    root="$(cat "$nd/cgroup-root" 2>/dev/null || true)"
    if [[ -n "$root" && -d "/sys/fs/cgroup/pids$root" ]]; then
      for pid in $(find "/sys/fs/cgroup/pids$root" -name cgroup.procs -exec cat {} + 2>/dev/null); do
        kill -KILL "$pid" 2>/dev/null || true
      done
      sleep 0.5
      remove_cgroup "$root"
    fi
  done
  # Deepest first: overlay roots, shm and the pods' volume mounts.
  awk -v dir="$DIR/" 'index($2, dir) == 1 { print $2 }' /proc/mounts | sort -r | while read -r mount; do
    umount -l "$mount" 2>/dev/null || true
  done
}

DIR="${TRELLIS_CONTROL_PLANE_DIR:-$ROOT/target/control-plane}"
cmd="${1:-}"; shift || true
case "$cmd" in
  build) build ;;
  install-node-tools) install_node_tools ;;
  up) up "$@" ;;
  down)
    [[ "${1:-}" == --dir ]] && DIR="$2"
    down ;;
  env)
    [[ "${1:-}" == --dir ]] && DIR="$2"
    [[ -f "$DIR/cluster.env" ]] || die "no control plane at $DIR (run: $0 up)"
    sed "s/^\([A-Z_]*\)=\(.*\)$/export \1='\2'/" "$DIR/cluster.env" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
