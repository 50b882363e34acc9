# Thin wrapper over meson/ninja. `make demo` and `make check` install what they need (scripts/deps.sh).
BUILDDIR ?= build
MESON_EXTRA ?=
NINJA ?= ninja

.PHONY: all build deps demo check bench bench-big bench-fuzz fuzz mutate clean install

all: build

deps:
	@scripts/deps.sh

$(BUILDDIR)/build.ninja:
	@scripts/deps.sh
	meson setup $(BUILDDIR) $(MESON_EXTRA)

build: $(BUILDDIR)/build.ninja
	$(NINJA) -C $(BUILDDIR)

check: deps build
	@tests/run.sh $(BUILDDIR)

demo: deps build
	@scripts/demo.sh $(BUILDDIR)

# every benchmark, on the machine as it is and with one core busy; a table of ratios at the end
bench: deps build
	@bench/all.sh $(BUILDDIR)

bench-big: deps build
	@bench/bigfile.sh $(BUILDDIR)

fuzz: deps build
	@fuzz/run.sh

# plants each bug of tests/mutate/mutants.txt, runs its tests, prints the kill rate (hours)
mutate: deps build
	@tests/mutate.sh

bench-fuzz: deps build
	@bench/fuzz.sh

install: build
	meson install -C $(BUILDDIR)

clean:
	rm -rf $(BUILDDIR) build-asan build-fuzz build-mutate build-release
