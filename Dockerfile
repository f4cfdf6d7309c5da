# Lookout in a container: a static binary (no cgo: SQLite is pure Go) on an
# empty base image, run as a non-root user, with its data in the /data volume.
#
#   docker build -t lookout .
#   docker run -d --name lookout -p 127.0.0.1:8000:8000 -v lookout-data:/data lookout
#
# Inside the container serve listens on 0.0.0.0:8000 (its default,
# 127.0.0.1, would not be reachable through -p); publish the port on the
# host's loopback as above unless other machines should reach it. Requests
# reach the container from Docker's network, not loopback, so local mode
# does not apply: create a user and a key (README, "Docker").

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same build as `make build`; -buildvcs=auto stamps the commit when .git
# came along in the build context.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=auto -o /out/lookout ./cmd/lookout \
	&& mkdir -p /out/data /out/tmp && chmod 1777 /out/tmp

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/lookout /usr/local/bin/lookout
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/tmp /tmp
USER 65532:65532
WORKDIR /data
VOLUME /data
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/lookout"]
CMD ["serve", "--addr", "0.0.0.0:8000", "--db", "/data/lookout.db"]
