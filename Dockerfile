# The image `bosun install` runs: the `bosun` binary, kubectl (the kustomize renderer runs
# `kubectl kustomize`) and the ssh client (Git over SSH), on Debian slim, as a non-root user.
#
#   docker build -t registry.example.com/bosun:dev .
#   bosun install --image registry.example.com/bosun:dev | kubectl apply --server-side -f -

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p bosun-cli

FROM debian:bookworm-slim
ARG KUBECTL_VERSION=v1.32.4
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates openssh-client curl \
 && arch="$(dpkg --print-architecture)" \
 && curl -fsSLo /usr/local/bin/kubectl "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${arch}/kubectl" \
 && echo "$(curl -fsSL "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${arch}/kubectl.sha256")  /usr/local/bin/kubectl" | sha256sum -c - \
 && chmod 0755 /usr/local/bin/kubectl \
 && apt-get purge -y curl && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/bosun /usr/local/bin/bosun
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/bosun"]
CMD ["controller"]
