# The scorectl image, for CI pipelines (scorectl convert, render, config validate, apply):
# a static binary on an empty base, running as a non-root user. `scorectl dev up` needs bash
# and the Go toolchain and does not run in it. Build from the repository root:
#   docker build -f build/scorectl.Dockerfile -t score-orchestrator/scorectl:0.1.0 .
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -ldflags="-s -w" -o /out/scorectl ./cmd/scorectl

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/scorectl /scorectl
USER 65532:65532
ENTRYPOINT ["/scorectl"]
