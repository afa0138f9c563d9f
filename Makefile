# Two commands on a fresh Debian/Ubuntu machine (see README.md):
#   make train   installs what is missing, builds the library and the trainer only, trains on Fashion-MNIST
#   make test    installs what is missing, builds, runs the whole CTest suite
#   make bench   also installs libtorch-dev, builds the benchmarks, runs them against libtorch (bench/)
# Variables: BUILD (build folder), CMAKE_ARGS (e.g. -DTENSORGRAD_CUDA=OFF), JOBS, ARGS (train flags;
# ARGS=--help lists them), BENCH_ARGS (flags for every bench/bench_* binary, e.g. --epochs 3 or --budget 2).
BUILD ?= build
CMAKE_ARGS ?=
BENCH_ARGS ?=
JOBS ?= 2
ARGS ?=

.PHONY: all deps configure build test train bench clean
all: build

deps:
	@tools/install_deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# Only the trainer and the library it links: no tests, other examples or benchmarks.
train: configure
	cmake --build $(BUILD) -j$(JOBS) --target train_fashion_mnist
	$(BUILD)/examples/train_fashion_mnist $(ARGS)

bench:
	@tools/install_deps.sh libtorch-dev
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTENSORGRAD_BUILD_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(BUILD) -j$(JOBS) --target tensorgrad_benchmarks
	bench/run_all.sh $(BUILD) $(BENCH_ARGS)

clean:
	rm -rf $(BUILD)
