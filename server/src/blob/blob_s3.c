/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blob_s3.c — the S3-compatible blob backend (blob.h): blob HEX is the
 * object BUCKET/PREFIX/HEX, addressed path-style on the configured endpoint.
 *
 * Every request is made by libcurl and signed with AWS Signature V4
 * (CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3"); the signed x-amz-content-sha256
 * header is always the SHA-256 of the payload (the empty string's for
 * bodiless requests), never UNSIGNED-PAYLOAD.  ListObjectsV2 answers are
 * parsed with libxml2.  A transport failure or a 5xx answer is retried with
 * exponential backoff (RETRIES attempts); a stalled transfer times out;
 * one that persists is -EAGAIN (connection refused or reset, 5xx) or
 * -ETIMEDOUT, both transient (store.h): the decoder keeps the upload
 * queued and the device is told to send again.
 * Invariants: a response body only reaches the caller's sink when the
 * status is 2xx, and a retried download restarts its sink (memory, or the
 * file truncated back to where it began) and its hash.  Object PUTs are
 * atomic in S3, so a crash leaves no partial blob: the sweep only removes
 * orphans and leaves alone objects under PREFIX not named like a blob.
 * One curl easy handle per request: a handle is safe on any work thread.
 */
#include "blob/blob.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "rearview/common.h"
#include "base/util.h"

#define RETRIES	       4
#define LIST_MAX_BYTES (16u << 20)
#define EMPTY_SHA256   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3_blobs {
	struct rvs_blobs base; /* first: the handle callers hold */
	char endpoint[512], bucket[256], prefix[512], access_key[256], secret[256];
	char sigv4[128];
	long timeout_ms;
};

/* One request and where its answer goes. */
struct req {
	struct s3_blobs *s;
	const char *method; /* GET PUT HEAD DELETE */
	char url[2048];
	const uint8_t *body; /* PUT payload */
	size_t body_len, body_off;
	char payload_hex[65];
	const char *extra[3]; /* further headers, NULL-terminated */
	/* Where a 2xx body goes: nowhere, memory up to mem_max, or fd up to
	 * fd_max; h (may be NULL, else started by the caller) hashes it. */
	enum { SINK_NONE, SINK_MEM, SINK_FD } sink;
	uint8_t *mem;
	size_t mem_len, mem_cap, mem_max;
	int fd;
	uint64_t fd_max, fd_len;
	off_t fd_start;
	struct rvs_blob_hasher *h;
	int too_big, sink_err;
	long status;
	curl_off_t length; /* Content-Length of a HEAD */
	int want_time;	   /* ask for Last-Modified into mtime (-1 unknown) */
	int64_t mtime;
	CURL *c;
};

static size_t on_read(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct req *r = arg;
	size_t n = size * nmemb;

	if (n > r->body_len - r->body_off)
		n = r->body_len - r->body_off;
	memcpy(buf, r->body + r->body_off, n);
	r->body_off += n;
	return n;
}

static size_t on_write(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct req *r = arg;
	size_t n = size * nmemb;
	long status = 0;

	curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299)
		return n; /* an error document: not the blob */
	if (r->sink == SINK_MEM) {
		if (n > r->mem_max - r->mem_len) {
			r->too_big = 1;
			return 0;
		}
		if (r->mem_len + n > r->mem_cap) {
			size_t cap = r->mem_cap ? r->mem_cap : 65536;
			while (cap < r->mem_len + n)
				cap *= 2;
			uint8_t *m = realloc(r->mem, cap);
			if (!m) {
				r->sink_err = -ENOMEM;
				return 0;
			}
			r->mem = m;
			r->mem_cap = cap;
		}
		memcpy(r->mem + r->mem_len, buf, n);
		r->mem_len += n;
	} else if (r->sink == SINK_FD) {
		if (n > r->fd_max - r->fd_len) {
			r->too_big = 1;
			return 0;
		}
		int rc = rvc_write_all(r->fd, buf, n);
		if (rc) {
			r->sink_err = rc;
			return 0;
		}
		r->fd_len += n;
	}
	if (r->h)
		rvs_blob_hasher_update(r->h, buf, n);
	return n;
}

static int transient(CURLcode cc)
{
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
	       cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING ||
	       cc == CURLE_PARTIAL_FILE;
}

/* Puts the sinks back to empty before attempt number `attempt`. */
static int reset_sinks(struct req *r, int attempt)
{
	r->mem_len = 0;
	r->body_off = 0;
	r->too_big = r->sink_err = 0;
	if (r->sink == SINK_FD) {
		if (ftruncate(r->fd, r->fd_start) < 0 || lseek(r->fd, r->fd_start, SEEK_SET) < 0)
			return -errno;
		r->fd_len = 0;
	}
	if (r->h && attempt) {
		mbedtls_sha256_free(&r->h->ctx);
		rvs_blob_hasher_init(r->h);
	}
	return 0;
}

/* Performs r with retries; 0 when the answer is 2xx (r->status has it),
 * else a negative errno (-ENOENT for a 404, -EACCES for 401/403). */
static int perform(struct req *r)
{
	struct s3_blobs *s = r->s;
	CURLcode cc = CURLE_OK;
	char sha_hdr[128];
	int rc = 0;

	snprintf(sha_hdr, sizeof sha_hdr, "x-amz-content-sha256: %s",
		 r->payload_hex[0] ? r->payload_hex : EMPTY_SHA256);
	if (r->sink == SINK_FD && (r->fd_start = lseek(r->fd, 0, SEEK_CUR)) < 0)
		return -errno;
	for (int attempt = 0; attempt < RETRIES; attempt++) {
		struct curl_slist *hdrs = NULL, *t;
		if (attempt) {
			/* 100 ms, 400 ms, 1.6 s. */
			struct timespec ts = {0, 0};
			long ms = 100L << (2 * (attempt - 1));
			ts.tv_sec = ms / 1000;
			ts.tv_nsec = (ms % 1000) * 1000000L;
			nanosleep(&ts, NULL);
		}
		if ((rc = reset_sinks(r, attempt)))
			return rc;
		if (!(r->c = curl_easy_init()))
			return -ENOMEM;
		t = curl_slist_append(hdrs, sha_hdr);
		hdrs = t ? t : hdrs;
		t = curl_slist_append(hdrs, "Expect:");
		hdrs = t ? t : hdrs;
		for (int i = 0; t && r->extra[i]; i++)
			hdrs = (t = curl_slist_append(hdrs, r->extra[i])) ? t : hdrs;
		if (!t) {
			curl_slist_free_all(hdrs);
			curl_easy_cleanup(r->c);
			return -ENOMEM;
		}
		curl_easy_setopt(r->c, CURLOPT_URL, r->url);
		curl_easy_setopt(r->c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(r->c, CURLOPT_AWS_SIGV4, s->sigv4);
		curl_easy_setopt(r->c, CURLOPT_USERNAME, s->access_key);
		curl_easy_setopt(r->c, CURLOPT_PASSWORD, s->secret);
		curl_easy_setopt(r->c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(r->c, CURLOPT_CONNECTTIMEOUT_MS, s->timeout_ms);
		curl_easy_setopt(r->c, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(r->c, CURLOPT_LOW_SPEED_TIME,
				 s->timeout_ms >= 2000 ? s->timeout_ms / 1000 : 1L);
		curl_easy_setopt(r->c, CURLOPT_WRITEFUNCTION, on_write);
		curl_easy_setopt(r->c, CURLOPT_WRITEDATA, r);
		if (strcmp(r->method, "PUT") == 0) {
			curl_easy_setopt(r->c, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(r->c, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(r->c, CURLOPT_READDATA, r);
			curl_easy_setopt(r->c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
		} else if (strcmp(r->method, "HEAD") == 0) {
			curl_easy_setopt(r->c, CURLOPT_NOBODY, 1L);
		} else if (strcmp(r->method, "GET") != 0) {
			curl_easy_setopt(r->c, CURLOPT_CUSTOMREQUEST, r->method);
		}
		if (r->want_time)
			curl_easy_setopt(r->c, CURLOPT_FILETIME, 1L);
		cc = curl_easy_perform(r->c);
		if (r->want_time) {
			curl_off_t ft = -1;
			curl_easy_getinfo(r->c, CURLINFO_FILETIME_T, &ft);
			r->mtime = (int64_t)ft;
		}
		r->status = 0;
		curl_easy_getinfo(r->c, CURLINFO_RESPONSE_CODE, &r->status);
		curl_easy_getinfo(r->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->length);
		curl_slist_free_all(hdrs);
		curl_easy_cleanup(r->c);
		r->c = NULL;
		if (r->too_big)
			return -EFBIG;
		if (r->sink_err)
			return r->sink_err;
		if (cc == CURLE_OK && r->status < 500)
			break;
		if (cc != CURLE_OK && !transient(cc))
			return -EIO;
	}
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return -ETIMEDOUT;
	/* Still refused, reset or 5xx after the retries: the server is away
	 * for now (blob.h's transient -EAGAIN), not wrong. */
	if (cc != CURLE_OK ? transient(cc) : r->status >= 500)
		return -EAGAIN;
	if (cc != CURLE_OK)
		return -EIO;
	if (r->status == 404)
		return -ENOENT;
	if (r->status == 401 || r->status == 403)
		return -EACCES;
	return r->status >= 200 && r->status <= 299 ? 0 : -EIO;
}

static void req_init(struct req *r, struct s3_blobs *s, const char *method, const char *hex)
{
	memset(r, 0, sizeof *r);
	r->s = s;
	r->method = method;
	r->fd = -1;
	r->sink = SINK_NONE;
	if (hex)
		snprintf(r->url, sizeof r->url, "%s/%s/%s%s%s", s->endpoint, s->bucket, s->prefix,
			 s->prefix[0] ? "/" : "", hex);
}

static struct s3_blobs *s3_of(struct rvs_blobs *b)
{
	return (struct s3_blobs *)b;
}

/* 1 stored with `len` bytes (-1: any size), 0 not, < 0 an error. */
static int head(struct s3_blobs *s, const char *hex, int64_t len)
{
	struct req r;
	int rc;

	req_init(&r, s, "HEAD", hex);
	rc = perform(&r);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	return len < 0 || r.length == len;
}

static int s3_put(struct rvs_blobs *b, const void *data, size_t len, char hex[65])
{
	struct s3_blobs *s = s3_of(b);
	uint8_t digest[32];
	char copy_src[1024];
	struct req r;
	int rc;

	rvs_sha256(data, len, digest);
	rvs_hex(digest, 32, hex);
	if ((rc = head(s, hex, (int64_t)len)) < 0)
		return rc;
	if (rc == 1) {
		/* Already stored: copying it onto itself renews LastModified,
		 * the age retention's grace window measures (retention.h). */
		snprintf(copy_src, sizeof copy_src, "x-amz-copy-source: /%s/%s%s%s", s->bucket,
			 s->prefix, s->prefix[0] ? "/" : "", hex);
		req_init(&r, s, "PUT", hex);
		r.extra[0] = copy_src;
		r.extra[1] = "x-amz-metadata-directive: REPLACE";
		r.body = (const uint8_t *)"";
		return perform(&r);
	}
	req_init(&r, s, "PUT", hex);
	r.body = data;
	r.body_len = len;
	memcpy(r.payload_hex, hex, 65);
	r.extra[0] = "Content-Type: application/octet-stream";
	return perform(&r);
}

static int s3_get(struct rvs_blobs *b, const char *hex, size_t max, uint8_t **out, size_t *len)
{
	struct req r;
	int rc;

	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	req_init(&r, s3_of(b), "GET", hex);
	r.sink = SINK_MEM;
	r.mem_max = max;
	rc = perform(&r);
	if (rc == 0 && !rvs_blob_matches(hex, r.mem ? r.mem : (uint8_t *)"", r.mem_len))
		rc = -EBADMSG;
	if (rc == 0 && !r.mem && !(r.mem = malloc(1)))
		rc = -ENOMEM;
	if (rc) {
		free(r.mem);
		return rc;
	}
	*out = r.mem;
	*len = r.mem_len;
	return 0;
}

static int s3_get_fd(struct rvs_blobs *b, const char *hex, uint64_t max, int fd)
{
	struct rvs_blob_hasher h;
	struct req r;
	int rc;

	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	req_init(&r, s3_of(b), "GET", hex);
	r.sink = SINK_FD;
	r.fd = fd;
	r.fd_max = max;
	r.h = &h;
	rvs_blob_hasher_init(&h);
	rc = perform(&r);
	if (!rvs_blob_hasher_matches(&h, hex) && rc == 0)
		rc = -EBADMSG;
	return rc;
}

static int s3_exists(struct rvs_blobs *b, const char *hex)
{
	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	return head(s3_of(b), hex, -1);
}

/* S3 has no conditional delete: the age is read by a HEAD first, so a put
 * between the two can still lose its blob (as between the local backend's
 * stat and unlink); retention's grace window makes that a narrow race. */
static int s3_del(struct rvs_blobs *b, const char *hex, int64_t min_age_s)
{
	struct req r;
	int rc;

	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	req_init(&r, s3_of(b), "HEAD", hex);
	r.want_time = 1;
	if ((rc = perform(&r)))
		return rc == -ENOENT ? 0 : rc;
	if (r.mtime < 0 || (int64_t)time(NULL) - r.mtime < min_age_s)
		return 0;
	req_init(&r, s3_of(b), "DELETE", hex);
	rc = perform(&r);
	return rc == -ENOENT ? 0 : rc < 0 ? rc : 1;
}

/* n's text content into buf (cut to len), or NULL when libxml2 ran out of
 * memory (an empty element is "", not NULL). */
static const char *xml_text(xmlNode *n, char *buf, size_t len)
{
	xmlChar *t = xmlNodeGetContent(n);
	if (!t)
		return NULL;
	snprintf(buf, len, "%s", (const char *)t);
	xmlFree(t);
	return buf;
}

static int64_t parse_time(const char *iso)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	if (!strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm))
		return -1;
	return (int64_t)timegm(&tm);
}

int rvs_s3_list_parse(const char *xml, size_t len, const char *prefix, struct rvs_s3_page *p)
{
	char buf[1100];
	int truncated = 0, rc = 0;

	p->n = 0;
	p->token[0] = '\0';
	if (len > LIST_MAX_BYTES)
		return -EIO;
	/* A parser context of its own, so that running out of memory (which
	 * libxml2 may answer with a document cut short) is told apart from
	 * bad XML. */
	xmlParserCtxt *ctxt = xmlNewParserCtxt();
	if (!ctxt)
		return -ENOMEM;
	xmlDoc *doc = xmlCtxtReadMemory(ctxt, xml, (int)len, "list.xml", NULL,
					XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	/* No document and no parse error: libxml2 could not allocate its
	 * input buffer. */
	int oom = ctxt->errNo == XML_ERR_NO_MEMORY || (!doc && ctxt->errNo == XML_ERR_OK && len);
	xmlFreeParserCtxt(ctxt);
	xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
	if (oom || !root || strcmp((const char *)root->name, "ListBucketResult") != 0) {
		xmlFreeDoc(doc);
		return oom ? -ENOMEM : -EIO;
	}
	for (xmlNode *n = root->children; n && rc == 0; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (strcmp((const char *)n->name, "IsTruncated") == 0) {
			if (!xml_text(n, buf, sizeof buf))
				rc = -ENOMEM;
			else
				truncated = strcmp(buf, "true") == 0;
		} else if (strcmp((const char *)n->name, "NextContinuationToken") == 0) {
			if (!xml_text(n, p->token, sizeof p->token))
				rc = -ENOMEM;
		} else if (strcmp((const char *)n->name, "Contents") == 0 &&
			   p->n < RVS_S3_PAGE_MAX) {
			char key[1100] = "", when[64] = "";
			for (xmlNode *k = n->children; k && rc == 0; k = k->next) {
				if (k->type != XML_ELEMENT_NODE)
					continue;
				if (strcmp((const char *)k->name, "Key") == 0) {
					if (!xml_text(k, key, sizeof key))
						rc = -ENOMEM;
				} else if (strcmp((const char *)k->name, "LastModified") == 0) {
					if (!xml_text(k, when, sizeof when))
						rc = -ENOMEM;
				}
			}
			const char *name = key + strlen(prefix);
			if (rc || strncmp(key, prefix, strlen(prefix)) != 0 ||
			    !rvs_blob_name_ok(name))
				continue; /* not ours */
			memcpy(p->names[p->n], name, 65);
			p->mtimes[p->n++] = parse_time(when);
		}
	}
	xmlFreeDoc(doc);
	if (rc) {
		p->n = 0;
		p->token[0] = '\0';
		return rc;
	}
	if (!truncated)
		p->token[0] = '\0';
	else if (!p->token[0]) {
		p->n = 0;
		return -EIO; /* truncated without a way on */
	}
	return 0;
}

/* One ListObjectsV2 page into p (rvs_s3_list_parse). */
static int list_page(struct s3_blobs *s, const char *token, struct rvs_s3_page *p)
{
	struct req r;
	char *ptok = NULL, *ppre = NULL, prefix[520];
	int rc;

	snprintf(prefix, sizeof prefix, "%s%s", s->prefix, s->prefix[0] ? "/" : "");
	req_init(&r, s, "GET", NULL);
	CURL *c = curl_easy_init();
	if (!c)
		return -ENOMEM;
	ppre = curl_easy_escape(c, prefix, 0);
	ptok = token[0] ? curl_easy_escape(c, token, 0) : NULL;
	curl_easy_cleanup(c);
	if (!ppre || (token[0] && !ptok)) {
		curl_free(ppre);
		curl_free(ptok);
		return -ENOMEM;
	}
	/* Parameters sorted by name: SigV4's canonical query string. */
	snprintf(r.url, sizeof r.url, "%s/%s?%s%s%slist-type=2&prefix=%s", s->endpoint, s->bucket,
		 ptok ? "continuation-token=" : "", ptok ? ptok : "", ptok ? "&" : "", ppre);
	curl_free(ppre);
	curl_free(ptok);
	r.sink = SINK_MEM;
	r.mem_max = LIST_MAX_BYTES;
	if ((rc = perform(&r))) {
		free(r.mem);
		return rc;
	}
	rc = rvs_s3_list_parse((const char *)r.mem, r.mem_len, prefix, p);
	free(r.mem);
	return rc;
}

static int s3_sweep(struct rvs_blobs *b, int64_t min_age_s,
		    int (*referenced)(const char *hex, void *arg), void *arg,
		    struct rvs_blob_sweep_stats *out)
{
	struct s3_blobs *s = s3_of(b);
	struct rvs_blob_sweep_stats st = {0, 0};
	struct rvs_s3_page p = {0};
	char token[sizeof p.token] = "";
	int64_t now = (int64_t)time(NULL);
	int rc = 0;

	p.names = malloc(RVS_S3_PAGE_MAX * sizeof *p.names);
	p.mtimes = malloc(RVS_S3_PAGE_MAX * sizeof *p.mtimes);
	if (!p.names || !p.mtimes)
		rc = -ENOMEM;
	do {
		if (rc || (rc = list_page(s, token, &p)))
			break;
		for (size_t i = 0; rc == 0 && referenced && i < p.n; i++) {
			int r = referenced(p.names[i], arg);
			if (r < 0)
				rc = r;
			else if (r == 0 && p.mtimes[i] >= 0 && now - p.mtimes[i] >= min_age_s &&
				 (r = s3_del(b, p.names[i], min_age_s)) != 0) {
				rc = r < 0 ? r : 0;
				st.orphans += r > 0;
			}
		}
		snprintf(token, sizeof token, "%s", p.token);
	} while (rc == 0 && token[0]);
	free(p.names);
	free(p.mtimes);
	if (out)
		*out = st;
	return rc;
}

static void s3_close(struct rvs_blobs *b)
{
	struct s3_blobs *s = s3_of(b);
	explicit_bzero(s->secret, sizeof s->secret);
	free(s);
}

static const struct rvs_blob_ops s3_ops = {
	.name = "s3",
	.put = s3_put,
	.get = s3_get,
	.get_fd = s3_get_fd,
	.exists = s3_exists,
	.del = s3_del,
	.sweep = s3_sweep,
	.path = NULL,
	.close = s3_close,
};

/* Reads the secret key from path, which only its owner may read. */
static int read_secret(const char *path, char *out, size_t outlen)
{
	size_t n;
	int rc = rvs_read_private_file(path, out, outlen - 1, &n);

	if (rc)
		return rc;
	out[n] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	return out[0] ? 0 : -EINVAL;
}

int rvs_blobs_open_s3(const char *bucket, const char *prefix, const struct rvs_blob_s3_config *c,
		      struct rvs_blobs **out)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				   "-_./";
	struct s3_blobs *s;
	size_t plen = strlen(prefix);
	int rc;

	if (!c || !c->endpoint || !c->endpoint[0] || !c->access_key || !c->access_key[0] ||
	    !c->secret_file || !c->secret_file[0] || !bucket[0] ||
	    strspn(bucket, safe) != strlen(bucket) || strchr(bucket, '/') ||
	    strspn(prefix, safe) != plen ||
	    (c->region && strspn(c->region, safe) != strlen(c->region)))
		return -EINVAL;
	while (plen && prefix[plen - 1] == '/')
		plen--;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -EIO;
	if (!(s = calloc(1, sizeof *s)))
		return -ENOMEM;
	if ((rc = read_secret(c->secret_file, s->secret, sizeof s->secret))) {
		free(s);
		return rc;
	}
	snprintf(s->endpoint, sizeof s->endpoint, "%s", c->endpoint);
	for (size_t n = strlen(s->endpoint); n && s->endpoint[n - 1] == '/'; n--)
		s->endpoint[n - 1] = '\0';
	snprintf(s->bucket, sizeof s->bucket, "%s", bucket);
	snprintf(s->prefix, sizeof s->prefix, "%.*s", (int)plen, prefix);
	snprintf(s->access_key, sizeof s->access_key, "%s", c->access_key);
	snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3",
		 c->region && c->region[0] ? c->region : "us-east-1");
	s->timeout_ms = c->timeout_ms ? (long)c->timeout_ms : 10000;
	s->base.ops = &s3_ops;
	assert((void *)s == (void *)&s->base);
	*out = &s->base;
	return 0;
}
