#!/usr/bin/env bash
# End to end on a real cluster: builds the image, creates a kind (or k3d)
# cluster, installs the chart, applies the cluster quickstart as written,
# waits for the Corpus to be Ready and the route
# Available, and asks the route a question.
#
# NOT RUN IN THIS REPOSITORY'S CI: the machines CI runs on have no container
# runtime able to host a Kubernetes API server. It is for users and
# developers with Docker and kind (or k3d) installed:
#
#   scripts/e2e-kind.sh              # kind
#   CLUSTER_TOOL=k3d scripts/e2e-kind.sh
#   KEEP_CLUSTER=1 scripts/e2e-kind.sh   # leave the cluster for a look
#
# Needs: docker, kubectl, helm, kind or k3d, curl.
set -euo pipefail
cd "$(dirname "$0")/.."

CLUSTER="${CLUSTER:-trellis-e2e}"
CLUSTER_TOOL="${CLUSTER_TOOL:-kind}"
IMAGE="${IMAGE:-trellis:e2e}"
NS="${NS:-trellis-e2e}"

for tool in docker kubectl helm "$CLUSTER_TOOL" curl; do
  command -v "$tool" >/dev/null || { echo "e2e: $tool is required" >&2; exit 2; }
done

cleanup() {
  if [[ -z "${KEEP_CLUSTER:-}" ]]; then
    case "$CLUSTER_TOOL" in
      kind) kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true ;;
      k3d) k3d cluster delete "$CLUSTER" >/dev/null 2>&1 || true ;;
    esac
  fi
  [[ -n "${FORWARD:-}" ]] && kill "$FORWARD" 2>/dev/null || true
}
trap cleanup EXIT

echo "== image"
docker build -t "$IMAGE" .

echo "== cluster ($CLUSTER_TOOL)"
case "$CLUSTER_TOOL" in
  kind)
    kind create cluster --name "$CLUSTER" --wait 120s
    kind load docker-image "$IMAGE" --name "$CLUSTER"
    ;;
  k3d)
    k3d cluster create "$CLUSTER" --wait
    k3d image import "$IMAGE" --cluster "$CLUSTER"
    ;;
  *) echo "e2e: CLUSTER_TOOL must be kind or k3d" >&2; exit 2 ;;
esac

echo "== chart"
kubectl create namespace "$NS"
helm install trellis charts/trellis --namespace "$NS" --wait \
  --set image.repository="${IMAGE%:*}" --set image.tag="${IMAGE##*:}" \
  --set image.pullPolicy=Never --set replicaCount=1

echo "== quickstart"
# As the chart's NOTES tell a user: the file as it is, nothing copied.
kubectl apply --namespace "$NS" -f examples/kubernetes/quickstart.yaml

echo "== waiting for the index and the route"
kubectl wait --namespace "$NS" --for=condition=Ready corpus/quickstart --timeout=900s
kubectl wait --namespace "$NS" --for=condition=Available retrievalroute/quickstart --timeout=600s
kubectl get --namespace "$NS" corp,rr,ixp

echo "== a question"
kubectl port-forward --namespace "$NS" svc/quickstart-retrieval 18080:8080 >/dev/null &
FORWARD=$!
sleep 3
answer="$(curl -sf localhost:18080/v1/retrieve \
  -H 'content-type: application/json' \
  -d '{"query": "Which law governs the hosting agreement?", "k": 3}')"
echo "$answer" | head -c 2000; echo
grep -q '"hits":\[{' <<<"$answer" || { echo "e2e: no hits in the answer" >&2; exit 1; }
echo "e2e: ok"
