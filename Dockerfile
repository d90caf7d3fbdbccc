# Builds the psync server. The image runs `psync serve` against the DATABASE_URL it is given
# (see docker-compose.yml); it carries no PostgreSQL of its own. Set PSYNC_HOST=0.0.0.0 to
# listen outside the container.
FROM swift:6.3-bookworm AS build
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
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
