# syntax=docker/dockerfile:1
# seckill: multi-stage build. The builder compiles a static binary (CGO_ENABLED=0) with the module
# and build caches mounted; the runtime image is Alpine (busybox wget serves the health check) and
# runs as an unprivileged user.

FROM golang:1.26.8 AS build
WORKDIR /src
# Dependencies first, so editing the code does not download them again.
COPY go.mod go.sum go.work ./
COPY lock/go.mod lock/go.sum ./lock/
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/seckill .

FROM alpine:3.20
RUN addgroup -S -g 10001 seckill && adduser -S -D -H -u 10001 -G seckill seckill
WORKDIR /app
# The service reads config/application.yaml from its working directory when present: mount your
# own over it, or override single keys with SECKILL_<SECTION>_<KEY> variables.
COPY --chown=root:root config/application.yaml /app/config/application.yaml
COPY --from=build --chown=root:root /out/seckill /usr/local/bin/seckill
USER 10001:10001
# Inside a container the service must listen beyond the container's own loopback, so the image
# starts in the public posture: the lab off (safe modes only, no faults, no reset, no in-memory
# Redis; restock needs SECKILL_SERVER_ADMINTOKEN). docker-compose.yml turns the lab on for its
# private topology, and the service then prints a WARNING naming that posture.
ENV SECKILL_SERVER_HOST=0.0.0.0 SECKILL_SERVER_PORT=8080 SECKILL_LAB_ENABLED=false
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=5 \
    CMD wget -q -O /dev/null "http://127.0.0.1:${SECKILL_SERVER_PORT}/readyz" || exit 1
ENTRYPOINT ["/usr/local/bin/seckill"]
CMD ["serve"]
