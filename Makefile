# Makefile -- builds lns: libraries, programs, tests, fuzzers and benchmarks.
#
#   make                  release build in build/release
#   make SAN=1            AddressSanitizer + UBSan build in build/asan
#   make V=1              print the full commands (default: one short line per step)
#   make test             install missing packages, build both, run every suite in both
#   make demo             local depots driven by ibp_tool and the lors_* tools, then the map GUI
#   make fuzz             libFuzzer on the request, exNode and L-Bone JSON parsers (FUZZ_SECONDS each, default 600)
#   make bench-depot      depot benchmarks against nginx and socat (docs/PERFORMANCE.md)
#   make bench-lors       lors_download against curl and aria2c, and its memory (docs/PERFORMANCE.md)
#   make bench-ec         erasure coding: ISA-L rates, --ec against copies, degraded reads (docs/PERFORMANCE.md)
#   make bench-wan        WAN scenarios on a namespace testbed vs aria2c (docs/wan-testbed.md)
#   make bench-wan-random SEEDS=N   N random testbed scenarios vs aria2c (issue 16's targets)
#   make bench-lbone      lbone_server with 10,000 depots: query latency, heartbeat rate (docs/PERFORMANCE.md)
#   make bench-serve      lors_serve and lors_mount against lors_download and IBP LOAD; the load curve
#   make bench-abuse      lbone_server and lors_serve under 2,000 slow connections: GETs within 1 s
#   make bench-mount      ls -l of 100,000 exNodes through lors_mount against local ls; its memory
#   make bench-tls        TLS against --tls off: upload, download, 4 KiB ops, handshakes (BENCH_LINK=1gbit)
#   make bench-zstd       lors_upload -z (zstd) against zstd -T2 -3 of a text corpus; --zlib, the levels
#   make bench-limit      the calibrator: memcpy, hashes, cipher, loopback TCP bare/hashed/sealed
#   make bench-ibp-perf   ACCRE's ibp_perf against an lns and an ACCRE 1.4 depot (docs/PERFORMANCE.md)
#   make soak             the long runs: every depot failpoint, then random faults (SOAK_SECONDS, default 600);
#                         concurrent exNode writers and tools SIGKILLed at random points
#   make interop          lns against the real ACCRE 1.4 and LoCI 1.3.1 programs (docs/interop.md)
#   make interop-build    build those programs (ACCRE_MIRROR=, LORS_MIRROR= their git dirs)
#   make install          PREFIX=/usr/local DESTDIR= (programs; libibp, libexnode, liblors, liblbone
#                         as .a and .so with their headers and pkg-config files)
#
# One folder, one layer (docs/layout.md).  Sources are found by folder:
#   common/*.c                 shared helpers: in libibp.a, and as hidden copies in each .so
#   ibp/*.c                    libibp, the IBP client library (ibp.h)
#   ibp_depot/depot_*.c        the depot server, ibp_depot/depot_main.c its program ibp_depot
#   exnode/*.c                 libexnode (xnd.h)
#   lors/*.c                   liblors, the LoRS engines (lors.h)
#   lbone/*.c                  liblbone, the L-Bone client library (lbone.h)
#   lbone/gazetteer/*.c        liblbone_geo.a, place names to coordinates (lbone_geo.h), for
#                              ibp_depot and lbone_server only; its data gazetteer.txt
#   lbone/server/*.c           lbone_server
#   tools/tool_*.c             the programs' own support library (tool.h): options, rc file,
#                              progress bar, event stream, exit codes
#   tools/NAME.c, NAME_*.c     the program NAME (TOOL_PROGS below)
#   tools/lifelines/           lors_lifelines and its analysis
#   serve/*.c                  the HTTP gateway over lors_reader (serve.h), tools/lors_serve.c
#   mount/*.c                  the FUSE file system over lors_reader (lmount.h), tools/lors_mount.c
#                              its program
#   players/NAME.c             lors_play, lns_paced
#   tests/{unit,system}/test_*.c one test program each; tests/fuzz/ the fuzz targets (fuzz.mk)

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  = $(PREFIX)/bin
LIBDIR  = $(PREFIX)/lib
INCDIR  = $(PREFIX)/include/lns
MANDIR  = $(PREFIX)/share/man
SYSCONFDIR ?= /etc

ifeq ($(SAN),1)
  B       = build/asan
  OPT     = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  SANLD   = -fsanitize=address,undefined
else
  B       = build/release
  OPT     = -O2 -g
  SANLD   =
endif

WARN     = -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes -Wno-unused-parameter
XML2_CFLAGS := $(shell pkg-config --cflags libxml-2.0 2>/dev/null || echo -I/usr/include/libxml2)
CPPFLAGS = -D_GNU_SOURCE -Icommon -Iibp -Iexnode -Ilors -Ilbone -Ilbone/gazetteer -Iibp_depot -Ilbone/server \
           -Iserve -Imount -Itools \
           -Itools/lifelines -Itests/lib $(XML2_CFLAGS)
# -fvisibility=hidden: a shared library exports only what its public header declares between
# "#pragma GCC visibility push(default)" and "pop" (ibp.h, xnd.h, lors.h, lbone.h).
CFLAGS   = -std=c11 $(OPT) $(WARN) -fPIC -fvisibility=hidden -pthread -MMD -MP
LDFLAGS  = -pthread $(SANLD)
LIBS     = -lxml2 -lssl -lcrypto -lz -lzstd -lisal -lsqlite3
TESTLIBS = -lcunit $(CAIRO_LIBS)
CAIRO_CFLAGS := $(shell pkg-config --cflags cairo fontconfig 2>/dev/null)
CAIRO_LIBS := $(shell pkg-config --libs cairo fontconfig 2>/dev/null || echo -lcairo -lfontconfig)
LBONE_LIBS = -lcurl -ljansson -lm
SRV_LIBS = -lmicrohttpd -ljansson -lm
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null || echo -I/usr/include/fuse3)
FUSE_LIBS := $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

COMMON_SRC = $(wildcard common/*.c)
LIBIBP_SRC = $(wildcard ibp/*.c)
EXNODE_SRC = $(wildcard exnode/*.c)
LORS_SRC   = $(wildcard lors/*.c)
LBONE_SRC  = $(wildcard lbone/*.c)
LBONE_GEO_SRC = $(wildcard lbone/gazetteer/*.c)
LBONE_SRV_SRC = $(filter-out lbone/server/lbone_server_main.c,$(wildcard lbone/server/*.c))
DEPOT_SRC  = $(filter-out ibp_depot/depot_main.c,$(wildcard ibp_depot/depot_*.c))
TOOLLIB_SRC = $(wildcard tools/tool_*.c)
SERVE_SRC  = $(wildcard serve/*.c)
MOUNT_SRC  = $(wildcard mount/*.c)
LIFELINES_SRC = $(filter-out tools/lifelines/lors_lifelines.c,$(wildcard tools/lifelines/*.c))
TOOL_PROGS = ibp_tool lbone_query lors_upload lors_download lors_augment lors_trim lors_refresh \
             lors_ls lors_share lors_keep lors_serve lors_mount
TESTLIB_SRC = $(wildcard tests/lib/*.c)
UNIT_SRC   = $(wildcard tests/unit/test_*.c)
SYS_SRC    = $(wildcard tests/system/test_*.c)
BENCH_SRC  = $(wildcard tests/bench/bench_*.c)

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

# Quiet by default, one short line per step ("  CC  build/release/obj/ibp/ibp.o"); warnings
# and errors still show.  make V=1 prints the full commands.  $(call say,WHAT,TARGET) starts a
# recipe line.  Objects that only a pattern rule names (the tests') are kept, not removed
# with an "rm" line after each build.
ifeq ($(V),1)
  say =
else
  say = @printf '  %-3s %s\n' $(1) $(2);
  MAKEFLAGS += --no-print-directory
endif
.SECONDARY:

# The rules below come from $(eval)s, so name the default goal.
.DEFAULT_GOAL := all

# The recipe of every static archive, made of its rule's prerequisites.  ar needs at least one
# member, so an empty layer gets an empty placeholder object (its rule names it order-only).
define ARCHIVE
@mkdir -p $(dir $@)
$(call say,AR,$@)rm -f $@ && ar rcs $@ $(or $^,$(B)/obj/empty.o)
endef

# Shared libraries.  The common/ helpers are internal: each .so takes the few it calls from
# liblns_common.a (an archive, so only the members it needs) as hidden copies of its own, and
# exports none of them.  None of those helpers keeps state that two libraries would have to
# share (liblors and liblbone use the stateless I/O, clock and event-log-handle calls; the
# table of TLS-sealed sockets that lns_net consults is libibp's alone, as only libibp and the
# depot speak on sockets through lns_net).
# -z defs: each .so names every library it needs.
LIBCOMMON_A = $(B)/lib/liblns_common.a
SO_LINK = $(CC) -shared -Wl,-z,defs -Wl,-soname,$(notdir $@).0 $(LDFLAGS) -o $@

# An installed library: $(call library,NAME,name,sources,more .a members,more .so
# prerequisites,.so link flags) defines LIB<NAME>_A and LIB<NAME>_SO and their rules.
# lib<name>.a holds the sources' objects; lib<name>.so links them with liblns_common.a.
define library
LIB$(1)_A  = $$(B)/lib/lib$(2).a
LIB$(1)_SO = $$(B)/lib/lib$(2).so
$$(LIB$(1)_A): $$(call obj,$(4) $(3)) | $$(B)/obj/empty.o
	$$(ARCHIVE)
$$(LIB$(1)_SO): $$(call obj,$(3)) $$(LIBCOMMON_A) $(5)
	$$(call say,LD,$$@)$$(SO_LINK) $$^ $(6)
endef
# libibp.a also holds the common/ helpers, for the programs that link the archives.
$(eval $(call library,IBP,ibp,$(LIBIBP_SRC),$(COMMON_SRC),,-lssl -lcrypto))
$(eval $(call library,EXNODE,exnode,$(EXNODE_SRC),,$(LIBIBP_SO),-lxml2 -lcrypto))
$(eval $(call library,LORS,lors,$(LORS_SRC),,$(LIBEXNODE_SO) $(LIBIBP_SO),-lcrypto -lz -lzstd -lisal))
$(eval $(call library,LBONE,lbone,$(LBONE_SRC),,,-lcurl -ljansson -lcrypto))

# BLAKE3, liblors's default checksum: the reference C implementation (Debian's
# librust-blake3-dev ships it as source, with no library to link), built into liblors with its
# portable code and each SIMD variant (its C intrinsics, each file with its own -m flags; the
# dispatcher picks one at run time).  Hidden like everything but lors.h: no blake3_* symbol is
# exported.  Its own code, so not our warnings.
B3_DIR := $(patsubst %/blake3.h,%,$(firstword $(wildcard /usr/share/cargo/registry/blake3-*/c/blake3.h)))
B3_DIR := $(or $(B3_DIR),/usr/share/cargo/registry/blake3-1.3.1/c)
B3_NAMES = blake3 blake3_dispatch blake3_portable blake3_sse2 blake3_sse41 blake3_avx2 blake3_avx512
B3_OBJ = $(patsubst %,$(B)/obj/blake3/%.o,$(B3_NAMES))
B3_ISA_blake3_sse2 = -msse2
B3_ISA_blake3_sse41 = -msse4.1
B3_ISA_blake3_avx2 = -mavx2
B3_ISA_blake3_avx512 = -mavx512f -mavx512vl
CPPFLAGS += -I$(B3_DIR)
$(B)/obj/blake3/%.o: $(B3_DIR)/%.c Makefile
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(OPT) -fPIC -fvisibility=hidden $(B3_ISA_$*) -c $< -o $@
$(LIBLORS_A) $(LIBLORS_SO): $(B3_OBJ)

LIBDEPOT_A = $(B)/lib/libdepot.a
LIBTOOL_A = $(B)/lib/libtool.a
LIBSERVE_A = $(B)/lib/libserve.a
LIBLMOUNT_A = $(B)/lib/liblmount.a
LIBLIFELINES_A = $(B)/lib/liblifelines.a
LIBLBONE_SRV_A = $(B)/lib/liblbone_srv.a
LIBLBONE_GEO_A = $(B)/lib/liblbone_geo.a
TOOL_BINS = $(addprefix $(B)/bin/,$(TOOL_PROGS)) $(B)/bin/lors_lifelines
SERVER_BINS = $(B)/bin/ibp_depot $(B)/bin/lbone_server
GAZETTEER = $(B)/share/lns/gazetteer.txt
UNIT_BINS = $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
SYS_BINS  = $(patsubst tests/system/%.c,$(B)/tests/%,$(SYS_SRC))
BENCH_BINS = $(patsubst tests/bench/%.c,$(B)/bench/%,$(BENCH_SRC))
# Everything a program may link, top layer first (static archives resolve left to right).
ALL_LIBS_A = $(LIBTOOL_A) $(LIBLORS_A) $(LIBLBONE_A) $(LIBEXNODE_A) $(LIBIBP_A)

.PHONY: all tests test deps benchprogs demo fuzz bench bench-depot bench-lors bench-ec bench-wan bench-wan-random bench-lbone bench-serve bench-abuse bench-mount bench-ibp-perf bench-tls bench-zstd bench-limit soak install uninstall clean \
        interop interop-build

# The installed libraries, each as .a and .so (soname lib<name>.so.0), and their public headers
# (lors.h includes ibp.h and xnd.h).
INSTALL_LIBS = libibp libexnode liblors liblbone
LIBS_SO = $(LIBIBP_SO) $(LIBEXNODE_SO) $(LIBLORS_SO) $(LIBLBONE_SO)
PUBLIC_HEADERS = ibp/ibp.h exnode/xnd.h lors/lors.h lbone/lbone.h

all: $(LIBIBP_A) $(LIBEXNODE_A) $(LIBLORS_A) $(LIBLBONE_A) $(LIBS_SO) $(SERVER_BINS) $(TOOL_BINS) \
     $(GAZETTEER)

tests: all $(UNIT_BINS) $(SYS_BINS) $(B)/bench/bench_sched_wan

# Objects depend on the Makefile too: a change of flags (such as -fvisibility) rebuilds them.
$(B)/obj/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIBCOMMON_A): $(call obj,$(COMMON_SRC))
	$(ARCHIVE)

$(B)/obj/empty.o:
	@mkdir -p $(dir $@)
	$(call say,CC,$@)echo 'typedef int lns_empty;' | $(CC) -x c -c - -o $@

$(LIBTOOL_A): $(call obj,$(TOOLLIB_SRC))
	$(ARCHIVE)
$(LIBSERVE_A): $(call obj,$(SERVE_SRC))
	$(ARCHIVE)
$(call obj,$(MOUNT_SRC)): CPPFLAGS += $(FUSE_CFLAGS)
$(LIBLMOUNT_A): $(call obj,$(MOUNT_SRC))
	$(ARCHIVE)

$(call obj,$(LIFELINES_SRC) tests/unit/test_lors_lifelines.c): CPPFLAGS += $(CAIRO_CFLAGS)
$(LIBLIFELINES_A): $(call obj,$(LIFELINES_SRC))
	$(ARCHIVE)

# tools/NAME.c and tools/NAME_*.c make the program NAME.
define tool_prog
$(B)/bin/$(1): $(call obj,$(wildcard tools/$(1).c tools/$(1)_*.c)) $(ALL_LIBS_A)
	@mkdir -p $$(dir $$@)
	$$(call say,LD,$$@)$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LIBS) $$(LBONE_LIBS) $$(TOOL_EXTRA_LIBS)
endef
$(foreach p,$(TOOL_PROGS),$(eval $(call tool_prog,$(p))))
# lors_serve: the gateway layer and libmicrohttpd
$(B)/bin/lors_serve: $(LIBSERVE_A)
$(B)/bin/lors_serve: TOOL_EXTRA_LIBS = $(LIBLORS_A) $(LIBEXNODE_A) $(LIBIBP_A) $(LIBS) $(SRV_LIBS)
# lors_mount: the FUSE layer and libfuse3
$(B)/bin/lors_mount: $(LIBLMOUNT_A)
$(B)/bin/lors_mount: TOOL_EXTRA_LIBS = $(LIBLORS_A) $(LIBEXNODE_A) $(LIBIBP_A) $(LIBS) $(FUSE_LIBS)

$(B)/bin/lors_lifelines: $(call obj,tools/lifelines/lors_lifelines.c) $(LIBLIFELINES_A) $(ALL_LIBS_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(LBONE_LIBS) $(CAIRO_LIBS)

# Players (players/NAME.c -> bin/NAME: lors_play, lns_paced), built, installed and removed
# with everything else; they link like the lors tools.  players/play_*.c are lors_play's
# modules (play_gateway.c: --start through a private lors_serve), not programs.
PLAYER_SRC  = $(filter-out players/play_%.c,$(wildcard players/*.c))
PLAYER_BINS = $(patsubst players/%.c,$(B)/bin/%,$(PLAYER_SRC))
all: $(PLAYER_BINS)
$(PLAYER_BINS): $(B)/bin/%: $(B)/obj/players/%.o $(ALL_LIBS_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LIBS) $(LBONE_LIBS)
$(B)/bin/lors_play: $(call obj,$(wildcard players/play_*.c))
.PHONY: install-players uninstall-players
install: install-players
install-players: $(PLAYER_BINS)
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(PLAYER_BINS) $(DESTDIR)$(BINDIR)/
uninstall: uninstall-players
uninstall-players:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(PLAYER_BINS)))

# The gazetteer: the daemons' place lookup, kept out of liblbone (no client resolves places),
# and its data file (made by lbone/gazetteer/gen_gazetteer.py, committed), staged where the
# daemons look for it: share/lns beside their bin/, in the build as once installed.
$(LIBLBONE_GEO_A): $(call obj,$(LBONE_GEO_SRC))
	$(ARCHIVE)
$(GAZETTEER): lbone/gazetteer/gazetteer.txt
	@mkdir -p $(dir $@)
	$(call say,CP,$@)cp $< $@

# The L-Bone server: its modules as a library (so unit tests can link them), and the server.
# liblbone, what clients link, is one of the installed libraries above.
$(LIBLBONE_SRV_A): $(call obj,$(LBONE_SRV_SRC))
	$(ARCHIVE)

$(B)/bin/lbone_server: $(call obj,lbone/server/lbone_server_main.c) $(LIBLBONE_SRV_A) $(LIBLBONE_GEO_A) \
                       $(LIBLBONE_A) $(LIBIBP_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(SRV_LIBS)

$(LIBDEPOT_A): $(call obj,$(DEPOT_SRC))
	$(ARCHIVE)

# The depot registers itself with L-Bones through liblbone, and checks its place in the
# gazetteer.
$(B)/bin/ibp_depot: $(call obj,ibp_depot/depot_main.c) $(LIBDEPOT_A) $(LIBLBONE_GEO_A) $(LIBLBONE_A) $(LIBIBP_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(LBONE_LIBS)

TEST_LINK = $(call obj,$(TESTLIB_SRC)) $(LIBDEPOT_A) $(LIBLIFELINES_A) $(LIBSERVE_A) $(LIBTOOL_A) $(LIBLORS_A) \
            $(LIBLBONE_SRV_A) $(LIBLBONE_GEO_A) $(LIBLBONE_A) $(LIBEXNODE_A) $(LIBIBP_A)

$(B)/tests/%: $(call obj,tests/unit/%.c) $(TEST_LINK)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(LBONE_LIBS) $(SRV_LIBS) $(TESTLIBS)

# test_alloc_fail counts the libraries' allocations: its own malloc & co. stand in front
$(B)/tests/test_alloc_fail: LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc \
    -Wl,--wrap=strdup,--wrap=strndup
$(B)/tests/%: $(call obj,tests/system/%.c) $(TEST_LINK)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(LBONE_LIBS) $(SRV_LIBS) $(TESTLIBS)

$(B)/bench/%: $(call obj,tests/bench/%.c tests/bench/usage.c) $(LIBLORS_A) $(LIBEXNODE_A) $(LIBIBP_A)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# bench_serve's HTTP clients (libcurl) and its plot (cairo)
$(call obj,tests/bench/bench_serve.c): CPPFLAGS += $(CAIRO_CFLAGS)
$(B)/bench/bench_serve: LIBS += -lcurl $(CAIRO_LIBS) -lm -lcrypto

benchprogs: all $(BENCH_BINS)

deps:
	@scripts/install-deps.sh

# The README's test command: both builds, every suite, one summary line.
test: deps
	$(MAKE) tests
	$(MAKE) SAN=1 tests
	$(MAKE) -f fuzz.mk smoke
	@tests/run.sh build/release build/asan

# Long runs that make test only samples: the depot's fault-injection harness over every
# (request, failpoint, action), then random faults until SOAK_SECONDS (docs/depot.md); then
# 30 rounds of concurrent exNode writers and 22 SIGKILLs at random points of each tool that
# allocates, counting what no exNode names (tests/system/test_lors_race.c).
soak: deps
	$(MAKE) tests
	LNS_FAULT_SOAK=1 LNS_FAULT_SECONDS=$(or $(SOAK_SECONDS),600) LNS_BIN=$(B)/bin \
	    $(B)/tests/test_depot_faults
	LNS_RACE_ROUNDS=30 LNS_RACE_KILLS=22 LNS_BIN=$(B)/bin $(B)/tests/test_lors_race

# The interoperability matrix against the real programs, built under LNS_INTEROP_PREFIX
# (default /work/interop) by make interop-build; not part of make test (their sources need
# the network).  Table in build/interop/table.md (docs/interop.md).
LNS_INTEROP_PREFIX ?= /work/interop
interop: all
	@LNS_INTEROP_PREFIX=$(LNS_INTEROP_PREFIX) tests/interop/interop.sh $(B)/bin

# The anchors' build scripts (outside this tree: ANCHORS, default ../shared/anchors), given
# git directories of accre/lstore and datalogistics/dlt-lors.
ANCHORS ?= ../shared/anchors
interop-build:
	@[ -n "$(ACCRE_MIRROR)" ] || [ -n "$(LORS_MIRROR)" ] || \
	    { echo "usage: make interop-build ACCRE_MIRROR=GIT_DIR LORS_MIRROR=GIT_DIR (docs/interop.md)" >&2; exit 2; }
	$(if $(ACCRE_MIRROR),$(ANCHORS)/build-accre.sh $(ACCRE_MIRROR) $(LNS_INTEROP_PREFIX)/accre $(LNS_INTEROP_PREFIX)/accre-work)
	$(if $(LORS_MIRROR),$(ANCHORS)/build-lors131.sh $(LORS_MIRROR) $(LNS_INTEROP_PREFIX)/lors131)

demo: deps all
	@scripts/demo.sh $(B)/bin

fuzz: deps
	$(MAKE) -k -f fuzz.mk FUZZ_SECONDS=$(or $(FUZZ_SECONDS),600)

bench: bench-depot bench-lors

bench-depot: deps
	$(MAKE) benchprogs
	@tests/bench/bench_depot.sh $(B)

# ACCRE's ibp_perf, built under LNS_INTEROP_PREFIX by make interop-build; skipped (said so,
# exit 0) when it is not there.
bench-ibp-perf: benchprogs
	@LNS_INTEROP_PREFIX=$(LNS_INTEROP_PREFIX) tests/bench/bench_ibp_perf.sh $(B) || [ $$? = 77 ]

bench-lors:
	@scripts/install-deps.sh --bench
	$(MAKE) benchprogs
	@tests/bench/bench_lors.sh $(B)

# Every tests/wan/scenarios/*.scn on the namespace testbed (root, ip, tc; Toxiproxy is
# installed into build/wan on first use).  WAN_SIZE=64M for a quick pass; table in build/wan.
bench-wan:
	@scripts/install-deps.sh --bench
	$(MAKE) all
	@tests/wan/bench_wan.sh $(B)

# SEEDS random scenarios (tests/wan/gen_scenario.sh) against aria2c; WAN_PIPE=1: to a pipe.
bench-wan-random:
	@scripts/install-deps.sh --bench
	$(MAKE) all
	@tests/wan/bench_wan_random.sh $(B)

# bench-NAME runs tests/bench/bench_NAME.sh over the benchmark programs. bench-tls: the sealed
# wire (issue 37) against plaintext; BENCH_LINK=1gbit puts the depots behind a shaped veth
# (root, ip, tc).
bench-ec bench-lbone bench-serve bench-tls bench-zstd bench-limit: bench-%: deps
	$(MAKE) benchprogs
	@tests/bench/bench_$*.sh $(B)

bench-mount: deps
	$(MAKE) all
	@tests/bench/bench_mount_many.sh $(B)

bench-abuse: deps
	$(MAKE) tests
	@tests/bench/bench_abuse.sh $(B)

VERSION := $(shell sed -n 's/.*LNS_VERSION "\(.*\)"/\1/p' common/lns_version.h)

# Every man/*.1 page is installed: ibp_tool(1) and one per lors_* tool.
MAN1 = $(wildcard man/*.1)
# The daemons: each has a systemd unit (scripts/NAME.service.in) and a sample config
# (scripts/NAME.conf.sample), installed as $(SYSCONFDIR)/lns/NAME.conf.sample and, unless the
# admin's is there already, as NAME.conf, the config the unit runs with (as nginx's make
# install does; make uninstall leaves NAME.conf, which may hold the admin's settings).
SERVICES = ibp_depot lbone_server

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSCONFDIR)/lns \
	    $(DESTDIR)$(PREFIX)/lib/systemd/system
	install -m 755 $(SERVER_BINS) $(TOOL_BINS) $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(PREFIX)/share/lns
	install -m 755 gui/lns_gui $(DESTDIR)$(BINDIR)/
	install -m 644 gui/world.txt gui/lns_gui_panels.tcl gui/lns_json.tcl \
	    lbone/gazetteer/gazetteer.txt $(DESTDIR)$(PREFIX)/share/lns/
	for l in $(INSTALL_LIBS); do \
	    install -m 644 $(B)/lib/$$l.a $(DESTDIR)$(LIBDIR)/ && \
	    install -m 755 $(B)/lib/$$l.so $(DESTDIR)$(LIBDIR)/$$l.so.0 && \
	    ln -sf $$l.so.0 $(DESTDIR)$(LIBDIR)/$$l.so && \
	    sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	        scripts/$$l.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/$$l.pc || exit 1; \
	done
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCDIR)/
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/ibp_depot.8 man/lbone_server.8 $(DESTDIR)$(MANDIR)/man8/
	for s in $(SERVICES); do \
	    install -m 644 scripts/$$s.conf.sample $(DESTDIR)$(SYSCONFDIR)/lns/$$s.conf.sample && \
	    { [ -e $(DESTDIR)$(SYSCONFDIR)/lns/$$s.conf ] || \
	      install -m 644 scripts/$$s.conf.sample $(DESTDIR)$(SYSCONFDIR)/lns/$$s.conf; } && \
	    sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	        scripts/$$s.service.in > $(DESTDIR)$(PREFIX)/lib/systemd/system/$$s.service || exit 1; \
	done

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(SERVER_BINS) $(TOOL_BINS))) \
	    $(foreach l,$(INSTALL_LIBS),$(addprefix $(DESTDIR)$(LIBDIR)/,$(l).a $(l).so $(l).so.0 pkgconfig/$(l).pc)) \
	    $(addprefix $(DESTDIR)$(INCDIR)/,$(notdir $(PUBLIC_HEADERS))) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1))) $(DESTDIR)$(MANDIR)/man8/ibp_depot.8 \
	    $(DESTDIR)$(MANDIR)/man8/lbone_server.8 \
	    $(foreach s,$(SERVICES),$(DESTDIR)$(PREFIX)/lib/systemd/system/$(s).service \
	        $(DESTDIR)$(SYSCONFDIR)/lns/$(s).conf.sample) \
	    $(DESTDIR)$(BINDIR)/lns_gui $(addprefix $(DESTDIR)$(PREFIX)/share/lns/,world.txt lns_gui_panels.tcl lns_json.tcl \
	        gazetteer.txt)
	rmdir $(DESTDIR)$(PREFIX)/share/lns $(DESTDIR)$(INCDIR) 2>/dev/null || true

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
