/* The sampler's 1 ms read loop without the interpreter (sparkfab.measure.counters.sampler uses it when it
 * was built; the Python loop there has the same contract and is the fallback).
 *
 * run(fds, out_fd, step_ns, deadline_ns, until_ns, missed, prev_t0)
 *   Sample every counter file at each deadline until the next deadline passes until_ns, writing
 *   one record per sample with one write(): int64 t0, int64 t1, uint32 missed_before, uint32 0,
 *   uint64 counter[n], little-endian. Sleeps with clock_nanosleep(TIMER_ABSTIME) and the GIL
 *   released. Returns (deadline_ns, missed, prev_t0, samples, missed_total, max_gap_ns, brackets)
 *   where brackets is the t1 - t0 of each sample as native int64 bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the sample record is little-endian; this loop writes native integers"
#endif

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(int64_t t) {
    struct timespec ts = {(time_t)(t / 1000000000LL), (long)(t % 1000000000LL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *fd_seq;
    int out_fd;
    long long step, deadline, until, prev_t0;
    unsigned int missed;
    if (!PyArg_ParseTuple(args, "OiLLLIL", &fd_seq, &out_fd, &step, &deadline, &until, &missed, &prev_t0))
        return NULL;
    if (step <= 0) {
        PyErr_SetString(PyExc_ValueError, "step_ns must be positive");
        return NULL;
    }
    PyObject *fast = PySequence_Fast(fd_seq, "fds must be a sequence of file descriptors");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int *fds = PyMem_Malloc(sizeof(int) * (n ? n : 1));
    if (!fds) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        fds[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
    }
    Py_DECREF(fast);
    if (PyErr_Occurred()) {
        PyMem_Free(fds);
        return NULL;
    }
    size_t rec_size = 24 + 8 * (size_t)n;
    unsigned char *rec = PyMem_Malloc(rec_size);
    size_t cap = (size_t)((until - deadline) / step + 2);
    if (cap < 2) cap = 2;
    int64_t *brackets = PyMem_Malloc(sizeof(int64_t) * cap);
    if (!rec || !brackets) {
        PyMem_Free(fds);
        PyMem_Free(rec);
        PyMem_Free(brackets);
        return PyErr_NoMemory();
    }
    long long samples = 0, missed_total = 0, max_gap = 0;
    int err = 0;
    const char *what = NULL;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        sleep_until(deadline);
        int64_t t0 = now_ns();
        uint64_t values[n ? n : 1];
        for (Py_ssize_t i = 0; i < n; i++) {
            char buf[40];
            ssize_t got = pread(fds[i], buf, sizeof buf - 1, 0);
            if (got < 0) {
                err = errno;
                what = "pread";
                break;
            }
            buf[got] = 0;
            values[i] = strtoull(buf, NULL, 10);
        }
        if (what) break;
        int64_t t1 = now_ns();
        uint32_t m = missed, pad = 0;
        memcpy(rec, &t0, 8);
        memcpy(rec + 8, &t1, 8);
        memcpy(rec + 16, &m, 4);
        memcpy(rec + 20, &pad, 4);
        memcpy(rec + 24, values, 8 * (size_t)n);
        if (write(out_fd, rec, rec_size) != (ssize_t)rec_size) {
            err = errno ? errno : EIO;
            what = "write";
            break;
        }
        if ((size_t)samples < cap) brackets[samples] = t1 - t0;
        samples++;
        if (prev_t0 && t0 - prev_t0 > max_gap) max_gap = t0 - prev_t0;
        prev_t0 = t0;
        deadline += step;
        int64_t now = now_ns();
        if (now > deadline) { /* late: skip the ticks we cannot make, and say so */
            missed = (unsigned int)((now - deadline) / step + 1);
            missed_total += missed;
            deadline += (long long)missed * step;
        } else {
            missed = 0;
        }
        if (deadline > until) break;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (what) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
    } else {
        size_t kept = (size_t)samples < cap ? (size_t)samples : cap;
        PyObject *br = PyBytes_FromStringAndSize((const char *)brackets, (Py_ssize_t)(kept * sizeof(int64_t)));
        if (br)
            result = Py_BuildValue("LILLLLN", deadline, missed, prev_t0, samples, missed_total, max_gap, br);
    }
    PyMem_Free(fds);
    PyMem_Free(rec);
    PyMem_Free(brackets);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS, "Sample until the next deadline passes until_ns (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sampleloop", "The sampler's read loop in C.", -1, methods};

PyMODINIT_FUNC PyInit__sampleloop(void) { return PyModule_Create(&module); }
