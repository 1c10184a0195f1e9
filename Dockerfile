# slipway's images: one static binary each on distroless, non-root (65532).
#   docker build --target operator -t slipway-operator .   (the default target)
#   docker build --target manager  -t slipway-manager  .
# These need a container engine; `make image` builds the same images without one (hack/image,
# docs/manager.md "Install in a cluster"), and TestDockerfile_AgreesWithTheBuilder keeps the two
# in step (binary path, user, entrypoint).
# The manager embeds the web UI (web/, internal/manager/ui): built from the lockfile, as make ui does.
FROM node:20-bookworm AS ui
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/ ./
COPY api/manager/openapi.json /src/api/manager/openapi.json
COPY internal/manager/ui/dist/.keep /src/internal/manager/ui/dist/.keep
RUN npm run build

FROM golang:1.26 AS source
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY config/ config/
COPY internal/ internal/
ARG TARGETOS=linux TARGETARCH=amd64
ENV GOOS=$TARGETOS GOARCH=$TARGETARCH

FROM source AS build-manager
COPY --from=ui /src/internal/manager/ui/dist/ internal/manager/ui/dist/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/manager ./cmd/manager

FROM source AS build-operator
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/operator ./cmd/operator

FROM gcr.io/distroless/static:nonroot AS manager
COPY --from=build-manager /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]

# The last stage is the default target: the operator, as before the manager had an image.
FROM gcr.io/distroless/static:nonroot AS operator
COPY --from=build-operator /out/operator /operator
USER 65532:65532
ENTRYPOINT ["/operator"]
