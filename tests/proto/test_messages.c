/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_messages.c — every message in proto/ round-trips through the
 * generated code.
 *
 * The list of messages comes from the generated headers (all-messages.h,
 * built by tests/tests.mk), and each message is filled by walking its
 * descriptor: every scalar gets a non-default value, every repeated field
 * two elements, every sub-message is filled recursively, and each member of
 * every oneof is exercised in turn.  So a field added to a schema is covered
 * without editing this file.  A round trip must reproduce the exact bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rearview/all-messages.h"

#define N_MESSAGES (sizeof(rv_all_messages) / sizeof(rv_all_messages[0]))
#define MAX_DEPTH  4

static ProtobufCMessage *fill_message(const ProtobufCMessageDescriptor *d, unsigned variant,
				      unsigned depth);

/* Writes a non-default value of field f's type at dst. */
static void fill_value(const ProtobufCFieldDescriptor *f, void *dst, unsigned seed,
		       unsigned variant, unsigned depth)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		*(int32_t *)dst = -(int32_t)(seed + 7);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		*(uint32_t *)dst = 0x80000000u + seed;
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		*(int64_t *)dst = -(int64_t)0x123456789ll - seed;
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		*(uint64_t *)dst = 0xfedcba9876543210ull + seed;
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		*(float *)dst = 1.5f + (float)seed;
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		*(double *)dst = 0.25 + seed;
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)dst = 1;
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *e = f->descriptor;

		/* The last value: never the zero default. */
		*(int *)dst = e->values[e->n_values - 1].value;
		break;
	}
	case PROTOBUF_C_TYPE_STRING: {
		char buf[64];

		snprintf(buf, sizeof(buf), "%s-%u-\xc3\xa9", f->name, seed);
		*(char **)dst = strdup(buf);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = dst;
		unsigned i;

		b->len = 3 + seed % 5;
		b->data = malloc(b->len);
		for (i = 0; i < b->len; i++)
			b->data[i] = (uint8_t)(0xA0 + i + seed);
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		*(ProtobufCMessage **)dst = fill_message(f->descriptor, variant, depth + 1);
		break;
	}
}

static size_t type_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return 4;
	case PROTOBUF_C_TYPE_FLOAT:
		return sizeof(float);
	case PROTOBUF_C_TYPE_DOUBLE:
		return sizeof(double);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_ENUM:
		return sizeof(int);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	default:
		return 8;
	}
}

/* Index of field i among the members of its oneof, and the oneof's size. */
static void oneof_position(const ProtobufCMessageDescriptor *d, unsigned i, unsigned *pos,
			   unsigned *count)
{
	unsigned j;

	*pos = 0;
	*count = 0;
	for (j = 0; j < d->n_fields; j++) {
		if (!(d->fields[j].flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
		    d->fields[j].quantifier_offset != d->fields[i].quantifier_offset)
			continue;
		if (j == i)
			*pos = *count;
		(*count)++;
	}
}

static ProtobufCMessage *fill_message(const ProtobufCMessageDescriptor *d, unsigned variant,
				      unsigned depth)
{
	ProtobufCMessage *m = calloc(1, d->sizeof_message);
	unsigned i;

	assert_non_null(m);
	d->message_init(m);
	if (depth > MAX_DEPTH)
		return m;
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char *base = (char *)m;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			unsigned pos, count;

			oneof_position(d, i, &pos, &count);
			if (variant % count != pos)
				continue;
			uint32_t id = f->id;

			memcpy(base + f->quantifier_offset, &id, sizeof(id));
			fill_value(f, base + f->offset, i, variant, depth);
		} else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t sz = type_size(f);
			char *arr = calloc(2, sz);

			assert_non_null(arr);
			fill_value(f, arr, i, variant, depth);
			fill_value(f, arr + sz, i + 100, variant, depth);
			size_t two = 2;

			/* memcpy: descriptor offsets are byte offsets into the struct. */
			memcpy(base + f->quantifier_offset, &two, sizeof(two));
			memcpy(base + f->offset, &arr, sizeof(arr));
		} else {
			protobuf_c_boolean yes = 1;

			if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
				memcpy(base + f->quantifier_offset, &yes, sizeof(yes));
			fill_value(f, base + f->offset, i, variant, depth);
		}
	}
	return m;
}

/* The largest oneof in d, so every member of every oneof gets a variant. */
static unsigned variants_of(const ProtobufCMessageDescriptor *d)
{
	unsigned i, n = 1;

	for (i = 0; i < d->n_fields; i++) {
		unsigned pos, count;

		if (!(d->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			continue;
		oneof_position(d, i, &pos, &count);
		if (count > n)
			n = count;
	}
	return n;
}

static void test_messages_every_message_round_trips_exactly(void **state)
{
	size_t k;
	unsigned tested = 0;

	(void)state;
	for (k = 0; k < N_MESSAGES; k++) {
		const ProtobufCMessageDescriptor *d = rv_all_messages[k];
		unsigned v, nv = variants_of(d);

		for (v = 0; v < nv; v++) {
			ProtobufCMessage *m = fill_message(d, v, 0), *back;
			size_t n = protobuf_c_message_get_packed_size(m), n2;
			uint8_t *a = malloc(n + 1), *b;

			assert_non_null(a);
			assert_int_equal(protobuf_c_message_pack(m, a), n);
			if (d->n_fields > 0)
				assert_true(n > 0);
			back = protobuf_c_message_unpack(d, NULL, n, a);
			if (!back)
				fail_msg("%s variant %u did not unpack", d->name, v);
			assert_true(protobuf_c_message_check(back));
			n2 = protobuf_c_message_get_packed_size(back);
			assert_int_equal(n2, n);
			b = malloc(n2 + 1);
			assert_non_null(b);
			protobuf_c_message_pack(back, b);
			if (memcmp(a, b, n) != 0)
				fail_msg("%s variant %u changed in a round trip", d->name, v);
			free(a);
			free(b);
			protobuf_c_message_free_unpacked(back, NULL);
			protobuf_c_message_free_unpacked(m, NULL);
			tested++;
		}
	}
	/* The schemas hold dozens of messages; an empty list means a broken build. */
	assert_true(N_MESSAGES >= 30);
	assert_true(tested >= N_MESSAGES);
}

/* Every prefix of a packed message either fails to unpack or unpacks to
 * something valid — never a crash (run under ASan by `make asan`). */
static void test_messages_truncated_input_never_crashes(void **state)
{
	size_t k;

	(void)state;
	for (k = 0; k < N_MESSAGES; k++) {
		const ProtobufCMessageDescriptor *d = rv_all_messages[k];
		ProtobufCMessage *m = fill_message(d, 0, 0);
		size_t n = protobuf_c_message_get_packed_size(m), cut;
		uint8_t *a = malloc(n + 1);

		protobuf_c_message_pack(m, a);
		for (cut = 0; cut < n; cut++) {
			uint8_t *copy = malloc(cut + 1);
			ProtobufCMessage *back;

			memcpy(copy, a, cut);
			back = protobuf_c_message_unpack(d, NULL, cut, copy);
			if (back)
				protobuf_c_message_free_unpacked(back, NULL);
			free(copy);
		}
		free(a);
		protobuf_c_message_free_unpacked(m, NULL);
	}
}

/* Known names are in the list: the generator did not silently drop a file. */
static void test_messages_list_covers_every_schema_file(void **state)
{
	static const char *const expected[] = {
		"rearview.ControlMessage", "rearview.EventMessage",   "rearview.AdminRequest",
		"rearview.AdminResponse",  "rearview.UploadEnvelope", "rearview.Summary",
		"rearview.SignedPolicy",   "rearview.PolicyBody",     "rearview.Error",
	};
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		int found = 0;

		for (k = 0; k < N_MESSAGES; k++)
			found |= strcmp(rv_all_messages[k]->name, expected[i]) == 0;
		if (!found)
			fail_msg("%s missing from the generated list", expected[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_messages_every_message_round_trips_exactly),
		cmocka_unit_test(test_messages_truncated_input_never_crashes),
		cmocka_unit_test(test_messages_list_covers_every_schema_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
