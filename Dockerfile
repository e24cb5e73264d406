# The harness image: harness and its sandbox helper, bubblewrap for skill
# scripts, util-linux (setpriv, for a harness that runs as root), git (the
# fetch of skills added from git repositories), and a user that is not root.
# Build it with `go tool task image` (or `docker build .`); a batch's
# workspace and skills go into an image built FROM this one.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/harness ./cmd/harness \
 && CGO_ENABLED=0 go build -trimpath -o /out/harness-sandbox ./cmd/harness-sandbox

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap util-linux git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 harness
COPY --from=build /out/harness /out/harness-sandbox /usr/local/bin/
USER harness
WORKDIR /work
ENTRYPOINT ["harness"]
