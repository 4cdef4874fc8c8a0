# The score-controllers image: a static binary on an empty base, running as a non-root user
# (the contents of a distroless "static:nonroot" image: CA certificates, no shell). Build from
# the repository root:
#   docker build -f build/score-controllers.Dockerfile -t score-orchestrator/score-controllers:0.1.0 .
# The Helm chart (charts/score-orchestrator) and config/default run it with a read-only root
# file system; it writes only to the emptyDir volumes they mount.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -ldflags="-s -w" -o /out/score-controllers ./cmd/score-controllers

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/score-controllers /score-controllers
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/score-controllers"]
