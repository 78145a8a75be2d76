# fuzz.mk -- libFuzzer targets (make fuzz; not part of make test).
#   make fuzz FUZZ_SECONDS=600
# Targets: fuzz_req (IBP request-line parser), fuzz_xnd (exNode XML parser + writer round trip),
# fuzz_lbone_json (the L-Bone's JSON decoding through jansson + writer round trip).
# Each target is built with clang, -fsanitize=fuzzer,address,undefined, and run in turn for
# FUZZ_SECONDS each (so make fuzz takes three times FUZZ_SECONDS) from the seed corpus in
# tests/fuzz/corpus_<name> (copied, so the committed seeds stay small).  Crashes land in
# build/fuzz/ and fail the run, but only at its end: `make fuzz` runs this file with -k, so
# every target gets its turn whatever an earlier one finds.

# pipefail: the fuzzer's exit status, not tail's, decides whether make fails.
SHELL = /bin/bash
.SHELLFLAGS = -o pipefail -c
CLANG ?= clang
FUZZ_SECONDS ?= 600
FB = build/fuzz
FFLAGS = -g -O1 -std=c11 -D_GNU_SOURCE -Icommon -Iibp \
         -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

XML2_CFLAGS := $(shell pkg-config --cflags libxml-2.0 2>/dev/null || echo -I/usr/include/libxml2)
XND_SRC = $(wildcard exnode/*.c)

.PHONY: all run run_req run_xnd run_lbone_json smoke
all: run

$(FB)/fuzz_req: tests/fuzz/fuzz_req.c ibp/ibp_proto.c ibp/ibp_proto.h
	@mkdir -p $(FB)
	$(CLANG) $(FFLAGS) -o $@ tests/fuzz/fuzz_req.c ibp/ibp_proto.c

XND_COMMON = common/lns_io.c common/lns_err.c common/lns_array.c common/lns_units.c common/lns_time.c
$(FB)/fuzz_xnd: tests/fuzz/fuzz_xnd.c tests/lib/xnd_same.h $(XND_SRC) exnode/xnd.h exnode/xnd_internal.h \
    ibp/ibp_cap.c $(XND_COMMON)
	@mkdir -p $(FB)
	$(CLANG) $(FFLAGS) -Iexnode $(XML2_CFLAGS) -o $@ tests/fuzz/fuzz_xnd.c $(XND_SRC) \
	    ibp/ibp_cap.c $(XND_COMMON) -lxml2 -lcrypto

# Every fuzz target lives in tests/fuzz/, beside its seed corpus.
$(FB)/fuzz_lbone_json: tests/fuzz/fuzz_lbone_json.c lbone/lbone_json.c common/lns_buf.c \
    common/lns_err.c lbone/lbone_json.h common/lns_buf.h
	@mkdir -p $(FB)
	$(CLANG) $(FFLAGS) -Ilbone -o $@ tests/fuzz/fuzz_lbone_json.c lbone/lbone_json.c \
	    common/lns_buf.c common/lns_err.c -ljansson -lm

run: run_req run_xnd run_lbone_json

# make test runs this: every target builds and gets through its committed seed corpus
# (each input once), so a change that breaks a fuzzer's build or its round trip fails CI.
smoke: $(FB)/fuzz_req $(FB)/fuzz_xnd $(FB)/fuzz_lbone_json
	$(FB)/fuzz_req -runs=0 tests/fuzz/corpus_req 2>&1 | tail -1
	$(FB)/fuzz_xnd -runs=0 tests/fuzz/corpus_xnd 2>&1 | tail -1
	$(FB)/fuzz_lbone_json -runs=0 tests/fuzz/corpus_lbone_json 2>&1 | tail -1

run_req: $(FB)/fuzz_req
	@mkdir -p $(FB)/corpus_req
	cp -n tests/fuzz/corpus_req/* $(FB)/corpus_req/ 2>/dev/null || true
	cd $(FB) && ./fuzz_req -max_total_time=$(FUZZ_SECONDS) -max_len=4200 \
	    -print_final_stats=1 corpus_req 2>&1 | tee fuzz_req.log | tail -25

run_xnd: $(FB)/fuzz_xnd
	@mkdir -p $(FB)/corpus_xnd
	cp -n tests/fuzz/corpus_xnd/* $(FB)/corpus_xnd/ 2>/dev/null || true
	cd $(FB) && ./fuzz_xnd -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 corpus_xnd 2>&1 | tee fuzz_xnd.log | tail -25

run_lbone_json: $(FB)/fuzz_lbone_json
	@mkdir -p $(FB)/corpus_lbone_json
	cp -n tests/fuzz/corpus_lbone_json/* $(FB)/corpus_lbone_json/ 2>/dev/null || true
	cd $(FB) && ./fuzz_lbone_json -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    -print_final_stats=1 corpus_lbone_json 2>&1 | tee fuzz_lbone_json.log | tail -25
