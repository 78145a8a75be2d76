# fuzz.mk -- libFuzzer targets (make fuzz; not part of make test).
#   make fuzz FUZZ_SECONDS=600
# Each target is built with clang, -fsanitize=fuzzer,address,undefined, and run for
# FUZZ_SECONDS from the seed corpus in tests/fuzz/corpus_<name> (copied, so the committed seeds
# stay small).  Crashes land in build/fuzz/ and fail the run.

CLANG ?= clang
FUZZ_SECONDS ?= 600
FB = build/fuzz
FFLAGS = -g -O1 -std=c11 -D_GNU_SOURCE -Icommon -Iibp_depot \
         -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

.PHONY: all run
all: run

$(FB)/fuzz_req: ibp_depot/ibp_fuzz.c ibp_depot/ibp_proto.c ibp_depot/ibp_proto.h
	@mkdir -p $(FB)
	$(CLANG) $(FFLAGS) -o $@ ibp_depot/ibp_fuzz.c ibp_depot/ibp_proto.c

run: $(FB)/fuzz_req
	@mkdir -p $(FB)/corpus_req
	cp -n tests/fuzz/corpus_req/* $(FB)/corpus_req/ 2>/dev/null || true
	cd $(FB) && ./fuzz_req -max_total_time=$(FUZZ_SECONDS) -max_len=4200 \
	    -print_final_stats=1 corpus_req 2>&1 | tee fuzz_req.log | tail -25
