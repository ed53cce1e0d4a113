# syntax=docker/dockerfile:1
# gpuctl's images for people who build with Docker (BuildKit): the images of `make image`
# (hack/image, which needs no container engine), on distroless bases instead of the bases
# hack/image makes from Debian's packages. One target per image:
#
#   docker buildx build --target gpuctl-reconciler --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u -d @$(git log -1 --format=%ct) +%Y-%m-%dT%H:%M:%SZ) \
#     -t ghcr.io/gpuctl/gpuctl-reconciler:VERSION .
#
# Targets: gpuctl-reconciler, gpuctl (static, CGO_ENABLED=0, cross-compiled) and
# gpuctl-node-labeler (cgo, built on the target platform). The names are those of
# hack/image/images.env. hack/image's tests check that each target keeps make image's
# entrypoint, user, working directory, ports, labels and build flags. For reproducible
# digests, pin the base images by digest (FROM image:tag@sha256:...).

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS source
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .

FROM source AS build-gpuctl-reconciler
ARG VERSION=dev TARGETOS TARGETARCH
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
    -ldflags "-X github.com/gpuctl/gpuctl/internal/version.Version=${VERSION}" \
    -o /out/gpuctl-reconciler ./cmd/gpuctl-reconciler

FROM source AS build-gpuctl
ARG VERSION=dev TARGETOS TARGETARCH
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
    -ldflags "-X github.com/gpuctl/gpuctl/internal/version.Version=${VERSION}" \
    -o /out/gpuctl ./cmd/gpuctl

# cgo: built on the target platform (under emulation for a foreign one), lazily bound so that
# it starts without the NVIDIA driver, whose libnvidia-ml.so.1 the container toolkit mounts.
FROM golang:${GO_VERSION}-bookworm AS build-gpuctl-node-labeler
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" CGO_LDFLAGS="-Wl,-z,lazy" go build -trimpath \
    -ldflags "-X github.com/gpuctl/gpuctl/internal/version.Version=${VERSION} -extldflags=-Wl,-z,lazy" \
    -o /out/gpuctl-node-labeler ./cmd/gpuctl-node-labeler

# What every image has besides its binary: the non-root user, its home, the CA certificates
# (the distroless bases carry them) and the labels. static: for the static binaries; glibc:
# glibc and CA certificates, no OpenSSL, what hack/image's glibc base holds.
FROM gcr.io/distroless/static-debian12:nonroot AS static
ARG VERSION=dev REVISION=unknown CREATED
USER 65532:65532
WORKDIR /home/nonroot
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
LABEL org.opencontainers.image.source=https://github.com/gpuctl/gpuctl \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.created=${CREATED}

FROM gcr.io/distroless/base-nossl-debian12:nonroot AS glibc
ARG VERSION=dev REVISION=unknown CREATED
USER 65532:65532
WORKDIR /home/nonroot
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
LABEL org.opencontainers.image.source=https://github.com/gpuctl/gpuctl \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.created=${CREATED}

FROM glibc AS gpuctl-node-labeler
COPY --from=build-gpuctl-node-labeler /out/gpuctl-node-labeler /usr/local/bin/gpuctl-node-labeler
ENTRYPOINT ["/usr/local/bin/gpuctl-node-labeler"]

FROM static AS gpuctl
COPY --from=build-gpuctl /out/gpuctl /usr/local/bin/gpuctl
ENTRYPOINT ["/usr/local/bin/gpuctl"]

# The default target.
FROM static AS gpuctl-reconciler
COPY --from=build-gpuctl-reconciler /out/gpuctl-reconciler /usr/local/bin/gpuctl-reconciler
EXPOSE 8080/tcp
ENTRYPOINT ["/usr/local/bin/gpuctl-reconciler"]
