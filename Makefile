# ampbench: one entry point for people and CI.
#   make run    install what is missing, build, run the default benchmark
#   make test   install what is missing, build, run every test
#   make lint   rustfmt, clippy -D warnings, the build without default
#               features (CI runs it before make test)

CARGO ?= cargo
BIN := target/release/ampbench

.PHONY: deps build run test lint bench fuzz clean

deps:
	@./scripts/deps.sh

build: deps
	$(CARGO) build --release

run: build
	$(BIN) run

# Skipped tests (a machine without root, loop devices or a browser) are
# counted and named at the end; under CI=true a skip fails its test.
# scripts/test.sh prints each test's time and the ten slowest at the end.
test: deps
	@rm -f target/test-skips.txt
	CARGO=$(CARGO) ./scripts/test.sh
	CARGO=$(CARGO) ./scripts/own-build.sh
	@if [ -s target/test-skips.txt ]; then \
	  echo "== $$(wc -l < target/test-skips.txt) test(s) skipped on this machine:"; \
	  sed 's/^/   /' target/test-skips.txt; \
	else echo "== no test skipped"; fi

lint: deps
	$(CARGO) fmt --all -- --check
	@# cargo fmt does not reach modules declared inside a macro (the
	@# engine registry's files): every tracked file is checked by name.
	rustfmt --edition 2024 --check $$(git ls-files '*.rs')
	$(CARGO) clippy --release --all-targets -- -D warnings
	$(CARGO) check --no-default-features
	CARGO=$(CARGO) ./scripts/own-build.sh --check-other-headers

bench: build
	./bench/vs-db_bench.sh
	./bench/linkbench-null.sh
	./bench/insert-null.sh
	./bench/loopback.sh
	./bench/pg-client.sh
	./bench/io-harness.sh
	./bench/device-model.sh
	./bench/seeds.sh
	./bench/seed-001-insert.sh
	./bench/soak.sh
	./bench/report-store.sh

# Fuzzing is apart from bench (an hour at its default of 10 minutes a
# target): make fuzz, or bench/fuzz.sh SECONDS [TARGET…].
fuzz:
	./bench/fuzz.sh

clean:
	$(CARGO) clean
