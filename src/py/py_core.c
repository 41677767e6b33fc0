/* slicesim._core, the CPython extension module under the Python package (python/slicesim): it
 * runs one of the CLI's commands (replay, compare, capacity, sweep, fit; app/cli.h) in this
 * process on its argument vector, with the interpreter's lock released, and hands back the exit
 * status, what the command printed as its result and its one-line error. Not for parsing options
 * or results: the commands' own parsers and JSON output do that, so that a call means and
 * answers exactly what the same command line does (python/slicesim/__init__.py builds the
 * vector and reads the JSON). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "app/cli.h"
#include "core/ss_alloc.h"

#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int command_fn(int argc, char **argv);

/* The commands a call may run: those that simulate and print JSON. */
static const struct {
    const char *name;
    command_fn *run;
} commands[] = {
    {"replay", cmd_replay}, {"compare", cmd_compare}, {"capacity", cmd_capacity},
    {"sweep", cmd_sweep},   {"fit", cmd_fit},
};

/* The commands keep state between their start and their end in globals (getopt's, the
 * allocator's counters, the output streams of app/cli.c), so one runs at a time in a process:
 * a second thread waits here, without the interpreter's lock, for the first to end. */
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;

/* What one command wrote, from its memory streams: the caller frees out and err with free(). */
typedef struct capture {
    char *out, *err;     /* contents (malloc'd by open_memstream) */
    size_t n_out, n_err; /* their lengths in bytes */
} capture;

static command_fn *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(commands[i].name, name))
            return commands[i].run;
    return NULL;
}

/* Run cmd on argv[0..argc) with its streams in memory, holding run_lock. Called without the
 * interpreter's lock: touches no Python object. Returns the command's exit status, or -1 when
 * a memory stream could not be opened (nothing ran; cap is left empty). */
static int run_captured(command_fn *cmd, int argc, char **argv, capture *cap)
{
    pthread_mutex_lock(&run_lock);
    int status = -1;
    FILE *out = open_memstream(&cap->out, &cap->n_out);
    FILE *err = out ? open_memstream(&cap->err, &cap->n_err) : NULL;
    if (out && err) {
        cli_set_streams(out, err);
        status = cmd(argc, argv);
        cli_set_streams(NULL, NULL);
        if (fclose(out) != 0 || ferror(err))
            status = status ? status : CLI_EFAIL;
        fclose(err);
    } else if (out) {
        fclose(out);
        free(cap->out);
        cap->out = NULL;
    }
    pthread_mutex_unlock(&run_lock);
    return status;
}

/* argv as C strings: vec[0..n) point into the UTF-8 of the items of seq (borrowed; seq holds
 * them); vec is PyMem_Free'd by the caller. NULL with an exception set on failure. */
static char **argv_of(PyObject *seq, Py_ssize_t *n_out)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    char **vec = PyMem_Calloc((size_t)n + 1, sizeof *vec);
    if (!vec) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t len = 0;
        const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : NULL;
        if (!s || strlen(s) != (size_t)len) {
            if (!PyErr_Occurred())
                PyErr_Format(s ? PyExc_ValueError : PyExc_TypeError,
                             s ? "argument %zd holds a NUL character" : "argument %zd is not a str",
                             i);
            PyMem_Free(vec);
            return NULL;
        }
        vec[i] = (char *)s;
    }
    *n_out = n;
    return vec;
}

PyDoc_STRVAR(run_doc,
    "run(argv) -> (status, out, err)\n\n"
    "Run the slicesim command argv[0] (replay, compare, capacity, sweep or fit) on the\n"
    "arguments argv[1:] in this process, as `slicesim ARGV...` would, without the interpreter's\n"
    "lock. status is the command's exit status (0, 1 a failed run, 2 bad input), out the bytes\n"
    "it printed as its result, err its error line(s). One command runs at a time.");

static PyObject *core_run(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "run() takes a sequence of str");
    if (!seq)
        return NULL;
    Py_ssize_t n = 0;
    char **argv = argv_of(seq, &n);
    command_fn *cmd = argv && n > 0 ? find_command(argv[0]) : NULL;
    if (argv && !cmd)
        PyErr_Format(PyExc_ValueError, "run(): not a command this module runs: %s",
                     n > 0 ? argv[0] : "(none)");
    PyObject *res = NULL;
    if (cmd) {
        capture cap = {0};
        int status;
        Py_BEGIN_ALLOW_THREADS
        status = run_captured(cmd, (int)n, argv, &cap);
        Py_END_ALLOW_THREADS
        if (status < 0)
            PyErr_NoMemory();
        else
            res = Py_BuildValue("(iy#y#)", status, cap.out ? cap.out : "", (Py_ssize_t)cap.n_out,
                                cap.err ? cap.err : "", (Py_ssize_t)cap.n_err);
        free(cap.out);
        free(cap.err);
    }
    PyMem_Free(argv);
    Py_DECREF(seq);
    return res;
}

PyDoc_STRVAR(live_bytes_doc,
    "live_bytes() -> int\n\n"
    "Bytes the C library holds allocated now (its counting allocator): what a run left behind.");

static PyObject *core_live_bytes(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    pthread_mutex_lock(&run_lock);
    size_t n = ss_alloc_live_bytes();
    pthread_mutex_unlock(&run_lock);
    return PyLong_FromSize_t(n);
}

static PyMethodDef core_methods[] = {
    {"run", core_run, METH_O, run_doc},
    {"live_bytes", core_live_bytes, METH_NOARGS, live_bytes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "slicesim._core",
    .m_doc = "slicesim's commands run in process (the C library); see the slicesim package.",
    .m_size = -1,
    .m_methods = core_methods,
};

PyMODINIT_FUNC PyInit__core(void);

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = PyModule_Create(&core_module);
    if (m && (PyModule_AddStringConstant(m, "source_root", SS_SOURCE_ROOT) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
