# Two commands on a fresh Debian/Ubuntu machine (see README.md):
#   make train   installs what is missing, builds, trains on Fashion-MNIST
#   make test    installs what is missing, builds, runs the whole CTest suite
# Variables: BUILD (build folder), CMAKE_ARGS (e.g. -DTENSORGRAD_CUDA=OFF), JOBS, ARGS (train flags).
BUILD ?= build
CMAKE_ARGS ?=
JOBS ?= 2
ARGS ?=

.PHONY: all deps build test train clean
all: build

deps:
	@tools/install_deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

train: build
	$(BUILD)/examples/train_fashion_mnist $(ARGS)

clean:
	rm -rf $(BUILD)
