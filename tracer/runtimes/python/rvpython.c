/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvpython.c — CPython 3.11 traced at its own level through librvtrace's
 * runtime API (trace.h "Runtime integrations", trace-runtime.h): every
 * Python function frame the interpreter evaluates is one frame in the
 * capture, named `file:line:qualname`.
 *
 * How: PEP 523's frame-evaluation hook.  The module installs its own
 * evaluation function for the interpreter that imports it; CPython then
 * calls it for every Python frame it runs — a function call, a generator
 * or coroutine resumed, a module body — instead of running the callee
 * inline in the caller's evaluation loop.  On an untraced thread the hook is
 * one thread-local load and a branch before CPython's own evaluator; on a
 * traced thread it records an entry before and an exit after, so:
 *   - a frame that returns, raises or is unwound records exactly one exit
 *     (the evaluator returns in every case; no longjmp in CPython);
 *   - a generator or coroutine enters and exits once per resumption, so its
 *     frames nest under whatever resumed them (as rvlua's coroutines);
 *   - C functions (builtins, methods of C types) are not frames: their time
 *     is their Python caller's self time.
 * The interpreter is never put in tracing mode (sys.setprofile would make
 * every instruction take the slow, unspecialised path).
 *
 * Keys: a code object may be freed and its address reused, so each code
 * object gets a key from rvt_key_new() on its first traced call, kept in the
 * code object's co_extra slot (_PyCode_SetExtra) for the life of the code
 * object; keys are never freed (a few dozen bytes per function that ever
 * ran traced).  Frames whose key cannot be made (out of memory) are not
 * traced, entry and exit alike.
 *
 * Invariant: on a traced thread the hook records an exit iff it recorded the
 * entry of the same frame, so muting a key (rvt_key_muted) or starting
 * tracing mid-frame never unbalances the ring.  Runs with the GIL held; no
 * lock of its own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <internal/pycore_frame.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "rvpython needs CPython 3.11's frame-evaluation API"
#endif

#include <rearview/trace-runtime.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* trace.h, rvt_control_start(): where the daemon listens by default. */
#define RVPY_DEFAULT_SOCKET "/run/rearview/control.sock"

static Py_ssize_t extra_index = -1;

/* The key of code object `co`, made on its first traced call; NULL when out
 * of memory.  Leaves the thread's exception state as it found it (a frame
 * may start with an exception pending: a generator's throw()). */
static const void *make_key(PyCodeObject *co)
{
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	const char *file = PyUnicode_AsUTF8(co->co_filename);
	if (!file) {
		PyErr_Clear();
		file = "?";
	}
	const char *name = PyUnicode_AsUTF8(co->co_qualname);
	if (!name) {
		PyErr_Clear();
		name = "?";
	}
	char full[512];
	snprintf(full, sizeof(full), "%s:%d:%s", file, co->co_firstlineno, name);
	const void *key = rvt_key_new(full);
	if (key && _PyCode_SetExtra((PyObject *)co, extra_index, (void *)key) < 0) {
		PyErr_Clear();
		key = NULL; /* not kept: a new key every call would grow forever */
	}
	PyErr_Restore(type, value, tb);
	return key;
}

static PyObject *traced_eval(PyThreadState *ts, _PyInterpreterFrame *f, int exc)
{
	void *key = NULL;
	if (_PyCode_GetExtra((PyObject *)f->f_code, extra_index, &key) < 0 || !key)
		key = (void *)make_key(f->f_code);
	if (!key || rvt_key_muted(key))
		return _PyEval_EvalFrameDefault(ts, f, exc);
	rvt_enter_inline(key);
	PyObject *r = _PyEval_EvalFrameDefault(ts, f, exc);
	rvt_exit_inline();
	return r;
}

static PyObject *rvpy_eval(PyThreadState *ts, _PyInterpreterFrame *f, int exc)
{
	if (rvt_thread_active())
		return traced_eval(ts, f, exc);
	return _PyEval_EvalFrameDefault(ts, f, exc);
}

/* capture(path): the calling thread's ring as a capture file at path
 * (rvt_capture_to_path); OSError on failure. */
static PyObject *py_capture(PyObject *self, PyObject *arg)
{
	PyObject *bytes;
	if (!PyUnicode_FSConverter(arg, &bytes))
		return NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS;
	rc = rvt_capture_to_path(0, PyBytes_AS_STRING(bytes));
	Py_END_ALLOW_THREADS;
	if (rc < 0) {
		errno = -rc;
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
		Py_DECREF(bytes);
		return NULL;
	}
	Py_DECREF(bytes);
	Py_RETURN_NONE;
}

/* tracing(): whether the calling thread is traced (rvt_is_tracing). */
static PyObject *py_tracing(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(rvt_is_tracing(0));
}

static PyMethodDef rvpython_methods[] = {
	{"capture", py_capture, METH_O,
	 "capture(path): write the calling thread's trace ring as a capture file."},
	{"tracing", py_tracing, METH_NOARGS, "tracing(): whether the calling thread is traced."},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef rvpython_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "_rvpython",
	.m_doc = "Rearview tracing of Python frames (tracer/runtimes/python/README.md).",
	.m_size = -1,
	.m_methods = rvpython_methods,
};

PyMODINIT_FUNC PyInit__rvpython(void);
PyMODINIT_FUNC PyInit__rvpython(void)
{
	if (extra_index < 0) {
		extra_index = _PyEval_RequestCodeExtraIndex(NULL);
		if (extra_index < 0) {
			PyErr_SetString(PyExc_RuntimeError,
					"rvpython: no code-object extra slot left");
			return NULL;
		}
	}
	PyInterpreterState *interp = PyInterpreterState_Get();
	_PyFrameEvalFunction cur = _PyInterpreterState_GetEvalFrameFunc(interp);
	if (cur != rvpy_eval && cur != _PyEval_EvalFrameDefault) {
		PyErr_SetString(PyExc_RuntimeError,
				"rvpython: another frame-evaluation hook is installed");
		return NULL;
	}
	_PyInterpreterState_SetEvalFrameFunc(interp, rvpy_eval);
	return PyModule_Create(&rvpython_module);
}

/*
 * At load: captures name the keys; and when a daemon is there to follow
 * (RV_SOCKET set, or the default control socket exists), the thread that
 * imports the module (the main thread, as a rule) is the UI thread and the
 * control thread connects to it, as rvlua does.  Without a daemon,
 * developer mode (RV_TRACE, RV_TRACE_FILE) only.
 */
__attribute__((constructor)) static void rvpython_init(void)
{
	rvt_set_resolver(rvt_key_resolve, NULL);
	const char *sock = getenv("RV_SOCKET");
	if ((sock && *sock) || access(RVPY_DEFAULT_SOCKET, F_OK) == 0) {
		rvt_set_ui_thread(0);
		rvt_control_start(NULL);
	}
}
