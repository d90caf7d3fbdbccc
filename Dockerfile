# Builds the psync server. The image runs `psync serve` against the DATABASE_URL it is given
# (see docker-compose.yml); it carries no PostgreSQL of its own. Set PSYNC_HOST=0.0.0.0 to
# listen outside the container.
# The build context is the repository's root; .dockerignore keeps build folders, databases and
# secrets out of it. The package needs Sources/, Tests/ (its test targets must exist) and
# Clients/ (the target WebClient, at Clients/js); scripts/check-compose.sh checks that every
# folder Package.swift names is copied.
FROM swift:6.3-bookworm AS build
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
COPY Clients ./Clients
RUN swift build -c release --product psync \
    && mkdir /app \
    && cp .build/release/psync /app/ \
    && cp -R .build/release/*.resources /app/ \
    && strip /app/psync

FROM swift:6.3-bookworm-slim
RUN useradd --system --home /app psync
WORKDIR /app
COPY --from=build /app /app
USER psync
EXPOSE 8080
ENTRYPOINT ["/app/psync"]
CMD ["serve"]
