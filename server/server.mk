# SPDX-License-Identifier: Apache-2.0
# server/ — rearview-server: HTTPS device API (libuv + mbedTLS + http-parser),
# sqlite3 storage, content-addressed blobs.  See server/README.md.

# The server's sources are server/src/<folder>/*.c (server/README.md "Where
# things are"; the folders' order is tests/lint-layers.sh's): every object
# but main.o is SERVER_CORE, which the tests link.  SRV: the objects' root.
SRV         := $(OBJ)/server/src
SERVER_SRC  := $(sort $(wildcard server/src/*/*.c server/src/*/*/*.c))
SERVER_CORE := $(patsubst %.c,$(OBJ)/%.o,$(filter-out server/src/app/main.c,$(SERVER_SRC)))
SERVER_OBJ  := $(SERVER_CORE) $(SRV)/app/main.o
# The blob backends (blob/blob.h): local directory, S3 (libcurl SigV4,
# libxml2), PostgreSQL bytea (libpq, also the PostgreSQL store).
BLOB_LIBS   := -lcurl $(call pc,--libs,libxml-2.0) $(call pc,--libs,libpq)
BLOB_OBJ    := $(patsubst %.c,$(OBJ)/%.o,$(wildcard server/src/blob/*.c)) $(SRV)/store/pg/pg.o
SERVER_LIBS := -luv -lmbedtls -lmbedx509 -lmbedcrypto -lhttp_parser -linih -lsqlite3 -lm \
	$(PROTOBUF_LIBS) $(LIBELF_LIBS) $(BLOB_LIBS) $(call pc,--libs,libsystemd) -lpthread
# The few objects the unit tests and fuzz targets link instead of SERVER_CORE.
SRV_UTIL     := $(SRV)/base/util.o $(SRV)/base/log.o
SRV_CONFIG   := $(SRV)/base/config.o $(SRV)/base/text.o
SRV_PARAMS   := $(SRV)/base/params.o $(SRV)/base/version.o $(SRV)/base/text.o
SRV_HTTP     := $(SRV)/http/http.o
SRV_UPLOAD   := $(SRV)/pipeline/upload.o $(SRV)/base/text.o
SRV_SKIPS    := $(SRV)/pipeline/skips.o
SRV_JANK     := $(SRV)/pipeline/jank.o
SRV_PAYLOAD  := $(SRV)/pipeline/payload.o
SRV_SYMSTORE := $(SRV)/model/symstore.o
SRV_CKPT     := $(addprefix $(SRV)/store/sqlite/,store_sqlite_checkpoint.o store_sqlite_util.o)

$(OBJ)/server/%.o: CPPFLAGS += -Iserver/src $(PROTOBUF_CFLAGS) -Itracer/analysis/include -Ipolicy/include $(call pc,--cflags,jansson) \
	$(LIBELF_CFLAGS) $(call pc,--cflags,libxml-2.0) $(call pc,--cflags,libpq) $(call pc,--cflags,libsystemd)

$(BIN)/rearview-server: $(SERVER_OBJ) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd

BINS += $(BIN)/rearview-server

# A server as it was before COMPRESSION_ZSTD_SHUFFLED (upload.c refuses it as
# an unknown compression): the daemon's fallback is tested against it.
$(OBJ)/tests/server/upload_v1.o: server/src/pipeline/upload.c $(FLAGS_STAMP) | $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -DRVS_ACCEPTS_SHUFFLED=0 $(CFLAGS) -c -o $@ $<
$(TBIN)/server/rearview-server-v1: $(filter-out $(SRV)/pipeline/upload.o,$(SERVER_OBJ)) \
  $(OBJ)/tests/server/upload_v1.o $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO) | $(WEB_ASSETS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd

# Tests.  The integration test runs the real binary from this build flavour.
$(OBJ)/tests/server/%.o: CPPFLAGS += -Iserver/src $(PROTOBUF_CFLAGS) \
	-DRVS_BIN='"$(BIN)/rearview-server"' -DRVS_SRCDIR='"$(CURDIR)"'
# The server suite's store switch (RVS_TEST_STORE=pg: tests/server/store_env.h),
# linked with the harnesses that start servers (test_web_server.o,
# server_common.o) and the tests that open a store.
RVT_STORE_ENV := $(OBJ)/tests/server/store_env.o
RVT_STORE_LIBS := $(call pc,--libs,libpq) -lsqlite3
$(RVT_STORE_ENV): CPPFLAGS += $(call pc,--cflags,libpq)


$(eval $(call rv_test,server,http,$(SRV_HTTP),-lhttp_parser,unit))
# test_store runs its cases on sqlite and on a private PostgreSQL it starts
# (tests/server/pg_harness.h).
$(SRV)/store/pg/store_pg.o $(OBJ)/tests/server/test_store.o: CPPFLAGS += $(call pc,--cflags,libpq)
# store.h's error contract (transient or permanent): the tables, and
# pipelines whose sessions end at random on the run's PostgreSQL.
$(OBJ)/tests/server/test_store_errors.o: CPPFLAGS += $(call pc,--cflags,libpq)
$(eval $(call rv_test,server,store_errors,$(SERVER_CORE) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration))
$(eval $(call rv_test,server,store,$(SERVER_CORE) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration tsan))
# Power loss simulated by a fault-injecting sqlite VFS (issue 18 item 6).
$(eval $(call rv_test,server,durable,$(SERVER_CORE) $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration tsan))
$(eval $(call rv_test,server,integration,$(SERVER_CORE) $(OBJ)/tests/server/capture_fixture.o $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVTRACE_A) $(LIBRVPROTO),-lcurl $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) $(RVT_LDLIBS) -lzstd,integration pg))
$(OBJ)/tests/server/capture_fixture.o: CFLAGS += -finstrument-functions
$(OBJ)/tests/server/test_integration.o: CPPFLAGS += -Itracer/include -Itracer/analysis/include -Ipolicy/include $(call pc,--cflags,jansson)
$(eval $(call rv_test,server,api,$(SERVER_CORE) $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),-lcurl $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration pg tsan))
$(OBJ)/tests/server/test_decode.o: CPPFLAGS += -Itracer/analysis/include -Itests/rvtrace
# The payload codec and the upload parser the decoder runs on.
$(eval $(call rv_test,server,decode,$(SRV_PAYLOAD) $(SRV_UPLOAD) $(LIBRVANALYSIS) $(LIBRVPROTO),-lzstd $(RVA_LIBS) $(PROTOBUF_LIBS),unit))
$(eval $(call rv_test,server,checkpoint,$(SRV_CKPT) $(SRV_UTIL) $(RVT_STORE_ENV),-lmbedx509 -lmbedcrypto $(RVT_STORE_LIBS),integration tsan))
$(eval $(call rv_test,server,config,$(SRV_CONFIG),-linih,unit))
# rearview-server as systemd runs it: journal priorities, readiness (the binary).
$(eval $(call rv_test,server,service,,,integration))
$(TBIN)/server/test_service: | $(BIN)/rearview-server
$(eval $(call rv_test,server,route,$(SERVER_CORE) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,unit))
$(OBJ)/tests/server/test_route.o: CPPFLAGS += $(call pc,--cflags,jansson)
# The shared parameter helpers (params.c) and the version order (version.c).
$(eval $(call rv_test,server,params,$(SRV_PARAMS) $(LIBRVPROTO),$(PROTOBUF_LIBS) -ljansson,unit))
# The anomaly heatmap, its cells' aggregates and the heaviest captures of a
# frame against recounts of a synthetic fleet (sqlite; PostgreSQL with pg).
$(eval $(call rv_test,server,heatmap,$(SERVER_CORE) $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration pg))
$(OBJ)/tests/server/test_heatmap.o: CPPFLAGS += -Itracer/analysis/include -Itests/rvtrace $(call pc,--cflags,jansson) $(call pc,--cflags,libpq)
# A method's trend: buckets, percentiles and the change point on exact inputs.
$(eval $(call rv_test,server,trend,$(SRV)/model/trend.o $(SRV)/base/version.o,-ljansson -lm,unit))
$(OBJ)/tests/server/test_params.o: CPPFLAGS += -Iserver/src $(call pc,--cflags,jansson)
# Worst traces, issues and chain search (search.c, issue.c) through the API.
$(eval $(call rv_test,server,search,$(SERVER_CORE) $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration))
$(OBJ)/tests/server/test_search.o: CPPFLAGS += $(call pc,--cflags,jansson) -Itests/rvtrace $(call pc,--cflags,libpq)
# A method's time on and off the CPU: the decoder's rows and the method
# API's split over exact captures (sqlite, then a private PostgreSQL).
$(eval $(call rv_test,server,method_cpu,$(SERVER_CORE) $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration))
$(OBJ)/tests/server/test_method_cpu.o: CPPFLAGS += $(call pc,--cflags,jansson) -Itests/rvtrace $(call pc,--cflags,libpq)
$(eval $(call rv_test,server,init,$(SRV_UTIL) $(RVT_STORE_ENV),-lmbedx509 -lmbedcrypto $(RVT_STORE_LIBS),integration pg))
$(TBIN)/server/test_integration $(TBIN)/server/test_init: | $(BIN)/rearview-server

# Fuzz targets (libFuzzer, clang): `make fuzz` builds them into build/fuzz.
# `make check` replays their corpora deterministically (test_fuzz_*).
FUZZ += $(BUILD)/fuzz/server_http $(BUILD)/fuzz/server_upload
$(BUILD)/fuzz/server_http: tests/fuzz/server_http.c server/src/http/http.c
	@mkdir -p $(@D)
	clang $(CPPFLAGS) -Iserver/src -g -O1 -fsanitize=fuzzer,address,undefined -o $@ $^ \
		-lhttp_parser
$(BUILD)/fuzz/server_upload: tests/fuzz/server_upload.c server/src/pipeline/upload.c \
		server/src/base/text.c $(PROTO_C) | $(PROTO_H)
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(PROTOBUF_CFLAGS) -Iserver/src -g -O1 \
		-fsanitize=fuzzer,address,undefined -o $@ $(filter %.c,$^) $(PROTOBUF_LIBS)


# The S3 blob backend's ListObjectsV2 parser (rvs_s3_list_parse, libxml2).
FUZZ += $(BUILD)/fuzz/server_s3list
$(BUILD)/fuzz/server_s3list: tests/fuzz/server_s3list.c server/src/blob/blob_s3.c \
		server/src/blob/blob.c server/src/base/util.c server/src/base/log.c
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(call pc,--cflags,libxml-2.0) -Iserver/src -g -O1 \
		-fsanitize=fuzzer,address,undefined -o $@ $^ $(BLOB_LIBS) -lmbedcrypto \
		$(call pc,--libs,libsystemd)
$(eval $(call rv_test,server,fuzz_s3list,$(SRV)/blob/blob_s3.o $(SRV)/blob/blob.o $(SRV_UTIL),$(BLOB_LIBS) \
  -lmbedcrypto $(call pc,--libs,libsystemd),torture))

# Campaign JSON (rvs_campaign_normalize), chain search patterns and the
# timeline's query parameters: these link the whole server core, so under
# `make fuzz` its objects carry libFuzzer's coverage instrumentation.
SRV_FUZZ_CORE := campaign search timeline
$(foreach n,$(SRV_FUZZ_CORE),$(eval $(OBJ)/tests/server/test_fuzz_$(n).o \
  $(OBJ)/tests/fuzz/server_$(n).o: CPPFLAGS += -Iserver/src -Itests/rvtrace \
  -Itracer/analysis/include $(call pc,--cflags,jansson) $(PROTOBUF_CFLAGS)))
$(foreach n,$(SRV_FUZZ_CORE),$(eval $(call rv_test,server,fuzz_$(n),$(SERVER_CORE) $(LIBRVANALYSIS) \
  $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,torture)))
ifeq ($(RV_FUZZ),1)
$(SERVER_CORE): CFLAGS += -fsanitize=fuzzer-no-link
$(SRV_FUZZ_CORE:%=$(BUILD)/fuzz/server_%): $(BUILD)/fuzz/server_%: $(OBJ)/tests/fuzz/server_%.o \
		$(SERVER_CORE) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd
FUZZ += $(SRV_FUZZ_CORE:%=$(BUILD)/fuzz/server_%)
endif

$(eval $(call rv_test,server,fuzz_http,$(SRV_HTTP),-lhttp_parser,torture))
$(eval $(call rv_test,server,fuzz_upload,$(SRV_UPLOAD) $(LIBRVPROTO),$(PROTOBUF_LIBS),torture))

# `make bench`: the upload load generator against the real binary.
$(TBIN)/server/bench_upload: $(OBJ)/tests/server/bench_upload.o $(OBJ)/tests/bench/server_workload.o \
		$(OBJ)/tests/bench/server_common.o $(RVT_STORE_ENV) $(LIBRVTRACE_A) $(LIBRVANALYSIS) $(LIBRVPROTO) \
		| $(BIN)/rearview-server
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter-out $(BIN)/%,$^) -lcurl -lzstd $(RVT_LDLIBS) $(PROTOBUF_LIBS) \
		$(RVT_STORE_LIBS)
$(OBJ)/tests/bench/server_workload.o: CFLAGS += -finstrument-functions
$(OBJ)/tests/bench/server_%.o: CPPFLAGS += -DRVS_BIN='"$(BIN)/rearview-server"' -Iserver/src -Itests/server
$(OBJ)/tests/server/bench_upload.o: CPPFLAGS += -Itracer/include -Itracer/analysis/include -Itests/bench
BENCHES += $(TBIN)/server/bench_upload

# `make bench`: issue 15's scale run, N = 1, 2, 4 nodes on one PostgreSQL,
# each in a CPU-quota'd cgroup (SCALING.md, BENCHMARKS.md).
$(TBIN)/server/bench_scale: $(OBJ)/tests/server/bench_scale.o $(OBJ)/tests/bench/server_workload.o \
		$(OBJ)/tests/bench/server_common.o $(RVT_STORE_ENV) $(LIBRVTRACE_A) $(LIBRVANALYSIS) \
		$(LIBRVPROTO) | $(BIN)/rearview-server
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter-out $(BIN)/%,$^) -lcurl -lzstd $(call pc,--libs,libpq) \
		$(RVA_LIBS) $(RVT_LDLIBS) $(PROTOBUF_LIBS) $(RVT_STORE_LIBS) -lpthread -lm
$(OBJ)/tests/server/bench_scale.o: CPPFLAGS += -Itracer/include -Itracer/analysis/include \
	-Itests/bench $(call pc,--cflags,libpq)
BENCHES += $(TBIN)/server/bench_scale

# `make bench`: the store backends side by side (sqlite, a private PostgreSQL).
$(TBIN)/server/bench_store: $(OBJ)/tests/server/bench_store.o $(SERVER_CORE) $(LIBRVANALYSIS) \
		$(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd
$(OBJ)/tests/server/bench_store.o: CPPFLAGS += $(call pc,--cflags,libpq)
BENCHES += $(TBIN)/server/bench_store
# issue 16's views on PostgreSQL at 100,000 synthetic traces (store16a;
# BENCHMARKS-web.md): `make bench-pg-views` (a private cluster, stopped after).
$(TBIN)/server/bench_pg_views: $(OBJ)/tests/server/bench_pg_views.o $(SERVER_CORE) \
		$(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd
$(OBJ)/tests/server/bench_pg_views.o: CPPFLAGS += $(call pc,--cflags,libpq)
.PHONY: bench-pg-views
bench-pg-views: $(TBIN)/server/bench_pg_views
	nice -n 19 sh tests/with-pg.sh $(TBIN)/server/bench_pg_views

# `make bench`: the zoomable timeline on a 1.4 M-call capture (issue 16).
$(TBIN)/server/bench_timeline: $(OBJ)/tests/server/bench_timeline.o $(SERVER_CORE) \
		$(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd
$(OBJ)/tests/server/bench_timeline.o: CPPFLAGS += -Itests/rvtrace -Itracer/analysis/include \
	$(call pc,--cflags,jansson)
BENCHES += $(TBIN)/server/bench_timeline

# Skip reports (POST /v1/skips): fuzz target and its corpus replay.
FUZZ += $(BUILD)/fuzz/server_skip
$(BUILD)/fuzz/server_skip: tests/fuzz/server_skip.c server/src/pipeline/skips.c server/src/pipeline/upload.c \
		server/src/base/text.c \
		$(PROTO_C) | $(PROTO_H)
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(PROTOBUF_CFLAGS) -Iserver/src -g -O1 \
		-fsanitize=fuzzer,address,undefined -o $@ $(filter %.c,$^) $(PROTOBUF_LIBS)
# Jank reports (POST /v1/jank): the parser's refusals.
$(eval $(call rv_test,server,jank_parse,$(SRV_JANK) $(SRV_UPLOAD) $(LIBRVPROTO),$(PROTOBUF_LIBS),unit))
$(eval $(call rv_test,server,fuzz_skip,$(SRV_SKIPS) $(SRV_UPLOAD) \
	$(LIBRVPROTO),$(PROTOBUF_LIBS),torture))

# The web UI's npm assets (server/web/package-lock.json pins them): speedscope,
# served under /static/speedscope/, and playwright-core, the browser test's
# driver of Debian's chromium.  One tree for every build flavour.  Without
# npm or the registry the UI still works (no speedscope) and the browser
# test skips; the rule then says so and retries on the next make.
WEB_DIR    := $(CURDIR)/build/web
WEB_ASSETS := build/web/.installed
$(WEB_ASSETS): server/web/package.json server/web/package-lock.json
	@mkdir -p $(@D)
	cp server/web/package.json server/web/package-lock.json $(@D)/
	@if command -v npm >/dev/null 2>&1 && (cd $(@D) && npm ci --no-audit --no-fund \
	    --loglevel=error >npm.log 2>&1); then \
	  ln -sfn node_modules/speedscope/dist/release $(@D)/speedscope && touch $@; \
	else echo "warning: npm ci failed (see $(@D)/npm.log): no speedscope, browser test skips" >&2; fi
# The server finds its assets in ../share/rearview/web beside its bin/ (no
# build path compiled in): the build tree links that to build/web, make
# install copies speedscope there.
WEB_LINK := $(BUILD)/share/rearview/web
$(WEB_LINK): | $(WEB_ASSETS)
	@mkdir -p $(@D) && ln -sfn $(WEB_DIR) $@
$(BIN)/rearview-server: | $(WEB_ASSETS) $(WEB_LINK)

# The web UI (server/WEB.md): the real binary driven over TLS by libcurl, and
# tests/browser/web.spec.js in headless chromium when it is installed.
$(eval $(call rv_test,server,web,$(OBJ)/tests/server/test_web_server.o $(RVT_STORE_ENV) $(OBJ)/tests/server/capture_fixture.o $(LIBRVTRACE_A) $(LIBRVPOLICY) $(LIBRVPROTO),-lcurl -lsqlite3 -lzstd -ljansson $(RVPOLICY_LDLIBS) $(RVT_LDLIBS) $(RVT_STORE_LIBS),system pg ci))
$(OBJ)/tests/server/test_web.o: CPPFLAGS += -Itracer/include -Itracer/analysis/include -Ipolicy/include \
	-Itests/rvtrace \
	$(call pc,--cflags,jansson) -DRVS_WEB_DIR='"$(WEB_DIR)"' \
	-DRVS_SHOTS_DIR='"$(CURDIR)/build/screenshots"'
$(TBIN)/server/test_web: | $(WEB_ASSETS)
$(TBIN)/server/test_web: | $(BIN)/rearview-server

# `make bench`: web page latency next to the JSON API at 100k indexed traces.
# Issue 18 item 2: exports streamed by the real binary, its peak memory read.
$(OBJ)/tests/server/test_export.o: CPPFLAGS += -Itests/rvtrace -Itracer/analysis/include
$(eval $(call rv_test,server,export,$(OBJ)/tests/server/test_web_server.o $(RVT_STORE_ENV) $(BLOB_OBJ) $(SRV_UTIL) $(LIBRVANALYSIS),$(BLOB_LIBS) -lsqlite3 -lmbedx509 -lmbedcrypto $(RVA_LIBS) -lzstd,torture pg plain))
$(TBIN)/server/test_export: | $(BIN)/rearview-server
$(OBJ)/tests/server/test_timeline.o: CPPFLAGS += -Itracer/analysis/include $(call pc,--cflags,jansson)
$(eval $(call rv_test,server,timeline,$(SERVER_CORE) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,unit))

$(OBJ)/tests/server/test_web_bench.o: CPPFLAGS += -Itests/bench
$(TBIN)/server/bench_web: $(OBJ)/tests/server/test_web_bench.o $(OBJ)/tests/server/test_web_server.o $(RVT_STORE_ENV) \
	| $(BIN)/rearview-server
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcurl -lsqlite3 $(RVT_STORE_LIBS)
BENCHES += $(TBIN)/server/bench_web

# Alert rules on trends: a synthetic fleet with a planted shift, the pass
# day by day, the alerts received by a real HTTP listener
# (webhook_receiver.c, shared with test_regress).
$(eval $(call rv_test,server,alerts,$(SERVER_CORE) $(OBJ)/tests/server/webhook_receiver.o $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),-lcurl $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration pg))

# Server ops: retention, signature totals, decode metrics.
$(eval $(call rv_test,server,retention,$(SERVER_CORE) $(OBJ)/tests/bench/server_common.o $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),-lcurl $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration pg))
$(OBJ)/tests/server/test_retention.o: CPPFLAGS += -Itests/bench
$(TBIN)/server/test_retention: | $(BIN)/rearview-server
$(TBIN)/server/bench_pages: $(OBJ)/tests/bench/server_pages.o $(OBJ)/tests/bench/server_common.o $(RVT_STORE_ENV) \
		| $(BIN)/rearview-server
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcurl -lsqlite3 $(RVT_STORE_LIBS)
BENCHES += $(TBIN)/server/bench_pages
$(OBJ)/tests/server/test_ingest.o: CPPFLAGS += -Itracer/analysis/include -Itests/rvtrace $(call pc,--cflags,libpq)
$(eval $(call rv_test,server,ingest,$(SERVER_CORE) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration tsan))
# Aggregate and differential flame graphs (agg.c, web_agg.c) from built captures.
$(OBJ)/tests/server/test_agg.o: CPPFLAGS += -Itracer/analysis/include -Itests/rvtrace $(call pc,--cflags,jansson) $(call pc,--cflags,libpq)
$(eval $(call rv_test,server,agg,$(SERVER_CORE) $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration tsan))
$(eval $(call rv_test,server,symbols,$(SERVER_CORE) $(OBJ)/tests/bench/server_common.o $(RVT_STORE_ENV) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),-lcurl $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,integration pg))
$(OBJ)/tests/server/test_symbols.o: CPPFLAGS += -Itests/bench -DRVS_SYMFIX='"$(TBIN)/server/symfix"'
$(TBIN)/server/test_symbols: | $(BIN)/rearview-server $(TBIN)/server/symfix.stripped \
	$(TBIN)/server/symfix.debug
# The symbolization fixture: instrumented, then split into a stripped
# program (what devices run) and its debug file (what engineers upload).
$(OBJ)/tests/server/symfix.o: CFLAGS += -finstrument-functions
$(TBIN)/server/symfix: $(OBJ)/tests/server/symfix.o $(LIBRVTRACE_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(LIB) -lrvtrace -Wl,-rpath,$(abspath $(LIB))
$(TBIN)/server/symfix.stripped: $(TBIN)/server/symfix
	objcopy --strip-all $< $@
$(TBIN)/server/symfix.debug: $(TBIN)/server/symfix
	objcopy --only-keep-debug $< $@
FUZZ += $(BUILD)/fuzz/server_symbols
# The symbol store's ELF reader (symstore.c) alone.
$(BUILD)/fuzz/server_symbols: tests/fuzz/server_symbols.c server/src/model/symstore.c server/src/base/util.c \
		server/src/base/log.c \
		$(LIBRVCOMMON)
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(LIBELF_CFLAGS) -Iserver/src -g -O1 -fsanitize=fuzzer,address,undefined \
		-o $@ $(filter %.c,$^) $(LIBRVCOMMON) $(LIBELF_LIBS) -lsqlite3 -lmbedcrypto -lpthread
$(eval $(call rv_test,server,fuzz_symbols,$(SRV_SYMSTORE) $(SRV_UTIL) $(LIBRVCOMMON),$(LIBELF_LIBS) -lsqlite3 -lmbedcrypto,torture))

# The blob interface against each backend (blob.h): a local directory, and
# S3 against npm s3rver (tests/server/s3rver pins it), started by the test;
# without npm or node the S3 cases skip.
S3RVER_DIR    := build/s3rver
S3RVER_ASSETS := $(S3RVER_DIR)/.installed
$(S3RVER_ASSETS): tests/server/s3rver/package.json tests/server/s3rver/package-lock.json
	@mkdir -p $(@D)
	cp $^ $(@D)/
	@if command -v npm >/dev/null 2>&1 && (cd $(@D) && npm ci --no-audit --no-fund \
	    --loglevel=error >npm.log 2>&1); then touch $@; \
	else echo "warning: npm ci failed (see $(@D)/npm.log): the S3 blob tests skip" >&2; fi
$(eval $(call rv_test,server,blob,$(BLOB_OBJ) $(SRV_UTIL) $(LIBRVCOMMON),$(BLOB_LIBS) -lmbedcrypto -lsqlite3,integration plain))
$(OBJ)/tests/server/test_blob.o: CPPFLAGS += \
	-DRVS_S3RVER='"$(CURDIR)/$(S3RVER_DIR)/node_modules/s3rver/bin/s3rver.js"' \
	-DRVS_BENCH_UPLOAD='"$(CURDIR)/$(TBIN)/server/bench_upload"' $(call pc,--cflags,libpq)
$(TBIN)/server/test_blob: | $(S3RVER_ASSETS) $(TBIN)/server/bench_upload

# Issue 15's end to end: two nodes on PostgreSQL + s3rver behind haproxy,
# one killed mid-ingest (the real binary; captures from the fixture).
$(OBJ)/tests/server/test_fleet.o: CPPFLAGS += $(call pc,--cflags,libpq) \
	-DRVS_S3RVER='"$(CURDIR)/$(S3RVER_DIR)/node_modules/s3rver/bin/s3rver.js"'
$(OBJ)/tests/server/fleet_client.o: CPPFLAGS += -Itracer/include
$(eval $(call rv_test,server,fleet,$(OBJ)/tests/server/test_web_server.o $(OBJ)/tests/server/fleet_client.o $(RVT_STORE_ENV) $(OBJ)/tests/server/capture_fixture.o $(LIBRVTRACE_A) $(LIBRVPROTO),-lcurl -lzstd $(RVT_STORE_LIBS) $(PROTOBUF_LIBS) $(RVT_LDLIBS),integration))
$(TBIN)/server/test_fleet: | $(S3RVER_ASSETS) $(BIN)/rearview-server
# Storage failures never quarantine what was acknowledged: two nodes on a
# private PostgreSQL and s3rver while PostgreSQL is killed, fast-restarted
# and its connections exhausted, and s3rver killed (test_chaos.c).
$(OBJ)/tests/server/test_chaos.o: CPPFLAGS += $(call pc,--cflags,libpq) \
	-DRVS_S3RVER='"$(CURDIR)/$(S3RVER_DIR)/node_modules/s3rver/bin/s3rver.js"'
$(eval $(call rv_test,server,chaos,$(OBJ)/tests/server/test_web_server.o $(OBJ)/tests/server/fleet_client.o $(RVT_STORE_ENV) $(OBJ)/tests/server/capture_fixture.o $(LIBRVTRACE_A) $(LIBRVPROTO),-lcurl -lzstd $(RVT_STORE_LIBS) $(PROTOBUF_LIBS) $(RVT_LDLIBS),integration))
$(TBIN)/server/test_chaos: | $(S3RVER_ASSETS) $(BIN)/rearview-server
# `make bench`: put/get throughput of the blob backends (BENCHMARKS.md).
$(TBIN)/server/bench_blob: $(OBJ)/tests/server/bench_blob.o $(BLOB_OBJ) $(SRV_UTIL) \
		$(LIBRVCOMMON)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(BLOB_LIBS) -lmbedcrypto -lsqlite3
BENCHES += $(TBIN)/server/bench_blob

# Issue 16 question 1, what got slower: the statistics, the automatic
# comparison with its webhook (a receiver in the test), and the fixture of
# three versions (fleet_fixture.c, reusable: synthetic captures with exact
# durations); its views in headless chromium (tests/browser/fleet.spec.js)
# when installed.
$(OBJ)/tests/server/fleet_fixture.o: CPPFLAGS += -Itests/rvtrace
$(OBJ)/tests/server/test_regress.o: CPPFLAGS += -Itests/bench $(call pc,--cflags,jansson) $(call pc,--cflags,libpq) \
	-DRVS_WEB_DIR='"$(WEB_DIR)"' -DRVS_SHOTS_DIR='"$(CURDIR)/build/screenshots"'
$(eval $(call rv_test,server,regress,$(SERVER_CORE) $(OBJ)/tests/server/fleet_fixture.o $(OBJ)/tests/server/webhook_receiver.o $(OBJ)/tests/server/test_web_server.o $(RVT_STORE_ENV) $(OBJ)/tests/bench/server_common.o $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVTRACE_A) $(LIBRVPROTO),-lcurl $(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) $(RVT_LDLIBS) -lzstd,system))
$(TBIN)/server/test_regress: | $(BIN)/rearview-server $(WEB_ASSETS)

# The oracle: a random fleet (fixed seed) of synthetic captures with exact
# durations uploaded to the real server, every fleet figure compared with a
# recount from the generated call trees (tests/server/test_oracle.c);
# RVS_ORACLE_TRACES sets its size (240 here; the large run: 10000).
$(OBJ)/tests/server/test_oracle.o: CPPFLAGS += -Itests/bench -Itests/rvtrace $(call pc,--cflags,jansson)
$(eval $(call rv_test,server,oracle,$(OBJ)/tests/bench/server_common.o $(RVT_STORE_ENV) $(LIBRVPROTO),-lcurl -ljansson -lm $(RVT_STORE_LIBS) $(PROTOBUF_LIBS),integration pg))
$(TBIN)/server/test_oracle: | $(BIN)/rearview-server $(BIN)/rvtrace

# Weighted aggregates: a synthetic population sampled by two campaigns
# (10 % and 100 %), the sample uploaded with its selections to the real
# server, its weighted mean against the population's true one
# (tests/server/test_weights.c).
$(OBJ)/tests/server/test_weights.o: CPPFLAGS += -Itests/bench -Itests/rvtrace $(call pc,--cflags,jansson)
$(eval $(call rv_test,server,weights,$(OBJ)/tests/bench/server_common.o $(RVT_STORE_ENV) $(LIBRVPROTO),-lcurl -ljansson -lm $(RVT_STORE_LIBS) $(PROTOBUF_LIBS),integration pg))
$(TBIN)/server/test_weights: | $(BIN)/rearview-server

# The JSON API's OpenAPI 3.1 document (server/openapi.json), compiled into
# the server (api/openapi.c's .incbin) and served at /api/v1/openapi.json.
# Its tools come from npm (tests/server/openapi pins them, like s3rver):
# @apidevtools/swagger-parser validates the document as OpenAPI 3.1, ajv
# (JSON Schema 2020-12) checks the real server's answers against it.
# Without npm or node the tests that need them skip, and say so.
$(SRV)/api/openapi.o: server/openapi.json
OPENAPI_DIR    := build/openapi-tools
OPENAPI_ASSETS := $(OPENAPI_DIR)/.installed
$(OPENAPI_ASSETS): tests/server/openapi/package.json tests/server/openapi/package-lock.json
	@mkdir -p $(@D)
	cp $^ $(@D)/
	@if command -v npm >/dev/null 2>&1 && (cd $(@D) && npm ci --no-audit --no-fund \
	    --loglevel=error >npm.log 2>&1); then touch $@; \
	else echo "warning: npm ci failed (see $(@D)/npm.log): the OpenAPI tests skip" >&2; fi
OPENAPI_FLAGS := -DRVS_OPENAPI_TOOLS='"$(CURDIR)/$(OPENAPI_DIR)/node_modules"' \
	-DRVS_OPENAPI_JS='"$(CURDIR)/tests/server/openapi"' -DRVS_OPENAPI_DOC='"$(CURDIR)/server/openapi.json"'
# The document is valid OpenAPI 3.1 (swagger-parser) and describes every
# JSON API entry of the route table with its methods and exact parameters.
$(OBJ)/tests/server/test_openapi_doc.o: CPPFLAGS += $(OPENAPI_FLAGS) $(call pc,--cflags,jansson)
$(eval $(call rv_test,server,openapi_doc,$(SERVER_CORE) $(LIBRVANALYSIS) $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,unit))
$(TBIN)/server/test_openapi_doc: | $(OPENAPI_ASSETS)
# Every endpoint's real answers, from a real server holding real uploads
# (the fleet fixture's captures), valid against the document (ajv).
$(OBJ)/tests/server/test_openapi.o: CPPFLAGS += $(OPENAPI_FLAGS) -Itests/bench -Itests/rvtrace $(call pc,--cflags,jansson)
$(eval $(call rv_test,server,openapi,$(OBJ)/tests/server/fleet_client.o $(OBJ)/tests/server/fleet_fixture.o $(OBJ)/tests/bench/server_common.o $(RVT_STORE_ENV) $(OBJ)/tests/server/capture_fixture.o $(LIBRVTRACE_A) $(LIBRVPROTO),-lcurl -lzstd -ljansson $(RVT_STORE_LIBS) $(PROTOBUF_LIBS) $(RVT_LDLIBS),integration pg))
$(TBIN)/server/test_openapi: | $(OPENAPI_ASSETS) $(BIN)/rearview-server
