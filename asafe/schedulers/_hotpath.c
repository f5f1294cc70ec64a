/*
 * asafe.schedulers._hotpath: the compiled per-task hooks of asafe.schedulers.local.
 *
 * Design
 * ------
 * Dask's local schedulers call a callback's ``pretask`` and ``posttask`` once per
 * task, on the scheduler's own loop: for trivial tasks the loop is the bottleneck
 * and every instruction in the hooks shows in the wall time (about 11k
 * instructions per task for the pure-Python hooks against 228k for Dask itself,
 * see docs/results/overhead). These two functions do exactly what the
 * pure-Python hooks ``_TrackingCallback._pretask`` and ``_posttask`` in
 * asafe/schedulers/local.py do, on the same objects, without the interpreter's frames:
 *
 * - ``Tally``: the counters of one (type, prefix) group, as C fields that the
 *   Python side reads and writes as attributes;
 * - ``RunState``: the base of ``asafe.schedulers.local._Run``, holding the dicts the hooks
 *   touch per task (``scheduled``, ``started``, ``by_func``) and ``next_flush``;
 * - ``Hooks(resolve, flush, prefix, clock=None)``: ``schedule``, ``pretask``,
 *   ``posttask`` and ``forget``. Everything off the common path stays in Python
 *   and is called back: ``resolve(run, key, dsk)`` (a task whose group is not
 *   cached), ``flush(run, now)`` (once per interval) and ``prefix(key)`` (string
 *   keys). The clock is time.perf_counter's own, read directly (``clock=None``)
 *   so both paths share one clock; tests pass a callable instead.
 *
 * Three things differ from the Python hooks, all to touch less per task (their
 * effect is counted by ``python -m benchmarks instructions``, docs/results):
 *
 * - a scheduled task's value in ``run.scheduled`` is a private ``Entry`` (its
 *   Tally and, once it runs, its start time) rather than the Tally itself, so
 *   ``pretask`` updates the entry it finds instead of inserting into
 *   ``run.started`` and ``posttask`` pops one dict instead of two (``started`` is
 *   used only for a task that runs without having been scheduled);
 * - the run of the last ``state`` is cached (with a reference to both) instead of
 *   looking up ``state["asafe-run"]`` twice per task; ``forget()`` drops it at the
 *   end of a run;
 * - the clock is read without a call through Python or a float object.
 *
 * asafe/schedulers/local.py is the reference: the Python hooks are the fallback where this
 * module is not built, and the test suite runs both and compares what they count.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <structmember.h>

static PyObject *str_run;        /* "asafe-run": a run's key in Dask's per-run state dict */
static PyObject *str_waiting;    /* "waiting" */
static PyObject *str_dependents; /* "dependents" */
static PyObject *str_func;       /* "func" */

/* ------------------------------------------------------------------ Tally */

typedef struct {
    PyObject_HEAD
    PyObject *task_type;
    PyObject *prefix;
    Py_ssize_t added;     /* became ready since the last flush */
    Py_ssize_t finished;  /* finished since the last flush */
    Py_ssize_t in_flight; /* added minus finished up to the last flush */
    double seconds;       /* summed durations of the finished ones */
} Tally;

static PyTypeObject TallyType;

static int
Tally_init(Tally *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"task_type", "prefix", NULL};
    PyObject *task_type, *prefix;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:Tally", kwlist, &task_type, &prefix)) {
        return -1;
    }
    Py_INCREF(task_type);
    Py_XSETREF(self->task_type, task_type);
    Py_INCREF(prefix);
    Py_XSETREF(self->prefix, prefix);
    self->added = self->finished = self->in_flight = 0;
    self->seconds = 0.0;
    return 0;
}

static int
Tally_traverse(Tally *self, visitproc visit, void *arg)
{
    Py_VISIT(self->task_type);
    Py_VISIT(self->prefix);
    return 0;
}

static int
Tally_clear(Tally *self)
{
    Py_CLEAR(self->task_type);
    Py_CLEAR(self->prefix);
    return 0;
}

static void
Tally_dealloc(Tally *self)
{
    PyObject_GC_UnTrack(self);
    Tally_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Tally_repr(Tally *self)
{
    return PyUnicode_FromFormat("Tally(%R, %R, added=%zd, finished=%zd, in_flight=%zd)",
                                self->task_type ? self->task_type : Py_None,
                                self->prefix ? self->prefix : Py_None,
                                self->added, self->finished, self->in_flight);
}

static PyMemberDef Tally_members[] = {
    {"task_type", T_OBJECT, offsetof(Tally, task_type), READONLY, "The group's task type."},
    {"prefix", T_OBJECT, offsetof(Tally, prefix), READONLY, "The group's key prefix."},
    {"added", T_PYSSIZET, offsetof(Tally, added), 0, "Tasks that became ready since the last flush."},
    {"finished", T_PYSSIZET, offsetof(Tally, finished), 0, "Tasks that finished since the last flush."},
    {"in_flight", T_PYSSIZET, offsetof(Tally, in_flight), 0, "Added minus finished up to the last flush."},
    {"seconds", T_DOUBLE, offsetof(Tally, seconds), 0, "Summed durations of the finished tasks."},
    {NULL}
};

static PyTypeObject TallyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "asafe.schedulers._hotpath.Tally",
    .tp_doc = PyDoc_STR("Tally(task_type, prefix): events of one (type, prefix) group since the last flush."),
    .tp_basicsize = sizeof(Tally),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Tally_init,
    .tp_traverse = (traverseproc)Tally_traverse,
    .tp_clear = (inquiry)Tally_clear,
    .tp_dealloc = (destructor)Tally_dealloc,
    .tp_repr = (reprfunc)Tally_repr,
    .tp_members = Tally_members,
};

/* ------------------------------------------------------------------ Entry */

/* A scheduled task in run.scheduled: its Tally and, once pretask has seen it, its
 * start time. Not tracked by the garbage collector: an Entry references only a
 * Tally, which references only its group's names (strings), so no reference cycle
 * can pass through one, and the collector's bookkeeping would be paid per task. */
typedef struct {
    PyObject_HEAD
    Tally *tally;
    double start;
    int started; /* whether start is set */
} Entry;

static PyTypeObject EntryType;

static void
Entry_dealloc(Entry *self)
{
    Py_XDECREF(self->tally);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Entry_repr(Entry *self)
{
    if (self->started) {
        PyObject *start = PyFloat_FromDouble(self->start);
        if (start == NULL) {
            return NULL;
        }
        PyObject *repr = PyUnicode_FromFormat("Entry(%R, start=%R)", (PyObject *)self->tally, start);
        Py_DECREF(start);
        return repr;
    }
    return PyUnicode_FromFormat("Entry(%R)", (PyObject *)self->tally);
}

static PyObject *
Entry_get_tally(Entry *self, void *Py_UNUSED(closure))
{
    Py_INCREF(self->tally);
    return (PyObject *)self->tally;
}

static PyObject *
Entry_get_start(Entry *self, void *Py_UNUSED(closure))
{
    if (!self->started) {
        Py_RETURN_NONE;
    }
    return PyFloat_FromDouble(self->start);
}

static PyGetSetDef Entry_getset[] = {
    {"tally", (getter)Entry_get_tally, NULL, "The task's Tally.", NULL},
    {"start", (getter)Entry_get_start, NULL, "When the task started (None before pretask).", NULL},
    {NULL}
};

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "asafe.schedulers._hotpath.Entry",
    .tp_doc = PyDoc_STR("A scheduled task in run.scheduled (compiled hooks): its Tally and start time."),
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Entry_dealloc,
    .tp_repr = (reprfunc)Entry_repr,
    .tp_getset = Entry_getset,
};

/* A new Entry of tally (a new reference to both). */
static Entry *
new_entry(Tally *tally)
{
    Entry *entry = PyObject_New(Entry, &EntryType);
    if (entry != NULL) {
        Py_INCREF(tally);
        entry->tally = tally;
        entry->start = 0.0;
        entry->started = 0;
    }
    return entry;
}

/* --------------------------------------------------------------- RunState */

typedef struct {
    PyObject_HEAD
    PyObject *scheduled; /* key -> its Entry (Tally in the Python hooks), from ready to finished */
    PyObject *started;   /* key -> start time (float), running tasks that have no entry */
    PyObject *by_func;   /* callable -> {key name or prefix -> Tally} */
    double next_flush;
} RunState;

static PyTypeObject RunStateType;

static PyObject *
RunState_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    RunState *self = (RunState *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->scheduled = PyDict_New();
    self->started = PyDict_New();
    self->by_func = PyDict_New();
    if (self->scheduled == NULL || self->started == NULL || self->by_func == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->next_flush = 0.0;
    return (PyObject *)self;
}

static int
RunState_traverse(RunState *self, visitproc visit, void *arg)
{
    Py_VISIT(self->scheduled);
    Py_VISIT(self->started);
    Py_VISIT(self->by_func);
    return 0;
}

static int
RunState_clear(RunState *self)
{
    Py_CLEAR(self->scheduled);
    Py_CLEAR(self->started);
    Py_CLEAR(self->by_func);
    return 0;
}

static void
RunState_dealloc(RunState *self)
{
    PyObject_GC_UnTrack(self);
    RunState_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef RunState_members[] = {
    {"scheduled", T_OBJECT, offsetof(RunState, scheduled), READONLY,
     "key -> its entry (compiled hooks) or tally (Python hooks), from ready to finished."},
    {"started", T_OBJECT, offsetof(RunState, started), READONLY,
     "key -> start time of a running task (compiled hooks: only one that has no entry)."},
    {"by_func", T_OBJECT, offsetof(RunState, by_func), READONLY, "callable -> {key name or prefix -> tally}."},
    {"next_flush", T_DOUBLE, offsetof(RunState, next_flush), 0, "When the tallies next go to the tracker."},
    {NULL}
};

static PyTypeObject RunStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "asafe.schedulers._hotpath.RunState",
    .tp_doc = PyDoc_STR("The per-task state of one run that the hooks touch (base of asafe.schedulers.local._Run)."),
    .tp_basicsize = sizeof(RunState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = RunState_new,
    .tp_traverse = (traverseproc)RunState_traverse,
    .tp_clear = (inquiry)RunState_clear,
    .tp_dealloc = (destructor)RunState_dealloc,
    .tp_members = RunState_members,
};

/* ------------------------------------------------------------------ Hooks */

typedef struct {
    PyObject_HEAD
    PyObject *resolve; /* resolve(run, key, dsk) -> Tally: the slow path */
    PyObject *flush;   /* flush(run, now): the tallies to the tracker */
    PyObject *prefix;  /* prefix(key) -> str, for keys that are not tuples */
    PyObject *clock;   /* clock() -> float, or NULL: time.perf_counter's clock, read directly */
    PyObject *state;   /* the last state dict seen, or NULL ... */
    RunState *run;     /* ... and its state["asafe-run"]: held until forget() */
} Hooks;

static int
Hooks_init(Hooks *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"resolve", "flush", "prefix", "clock", NULL};
    PyObject *resolve, *flush, *prefix, *clock = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|O:Hooks", kwlist, &resolve, &flush, &prefix, &clock)) {
        return -1;
    }
    PyObject *given[] = {resolve, flush, prefix, clock};
    for (int i = 0; i < 4; i++) {
        if (!PyCallable_Check(given[i]) && !(i == 3 && clock == Py_None)) {
            PyErr_Format(PyExc_TypeError, "Hooks() argument '%s' must be callable%s, got %R", kwlist[i],
                         i == 3 ? " or None" : "", given[i]);
            return -1;
        }
    }
    Py_INCREF(resolve);
    Py_XSETREF(self->resolve, resolve);
    Py_INCREF(flush);
    Py_XSETREF(self->flush, flush);
    Py_INCREF(prefix);
    Py_XSETREF(self->prefix, prefix);
    if (clock == Py_None) {  /* perf_counter's clock, read directly */
        Py_CLEAR(self->clock);
    }
    else {
        Py_INCREF(clock);
        Py_XSETREF(self->clock, clock);
    }
    Py_CLEAR(self->state);
    Py_CLEAR(self->run);
    return 0;
}

static int
Hooks_traverse(Hooks *self, visitproc visit, void *arg)
{
    Py_VISIT(self->resolve);
    Py_VISIT(self->flush);
    Py_VISIT(self->prefix);
    Py_VISIT(self->clock);
    Py_VISIT(self->state);
    Py_VISIT(self->run);
    return 0;
}

static int
Hooks_clear(Hooks *self)
{
    Py_CLEAR(self->resolve);
    Py_CLEAR(self->flush);
    Py_CLEAR(self->prefix);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->state);
    Py_CLEAR(self->run);
    return 0;
}

static void
Hooks_dealloc(Hooks *self)
{
    PyObject_GC_UnTrack(self);
    Hooks_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* mapping[key] as a new reference (KeyError when missing), fast for dicts. */
static PyObject *
get_item(PyObject *mapping, PyObject *key)
{
    if (PyDict_CheckExact(mapping)) {
        PyObject *value = PyDict_GetItemWithError(mapping, key);
        if (value == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetObject(PyExc_KeyError, key);
            }
            return NULL;
        }
        Py_INCREF(value);
        return value;
    }
    return PyObject_GetItem(mapping, key);
}

/* state["asafe-run"], which must be a RunState: a new reference. The run of the
 * last state is cached; holding a reference to that state keeps its identity
 * from being reused by another dict while it is cached. Dask sets the run once
 * per state (start_state) and a run ends with forget(). */
static RunState *
run_of(Hooks *self, PyObject *state)
{
    if (state != self->state || self->run == NULL) {
        PyObject *run = get_item(state, str_run);
        if (run == NULL) {
            return NULL;
        }
        if (!PyObject_TypeCheck(run, &RunStateType)) {
            PyErr_Format(PyExc_TypeError, "asafe: state[%R] is a %s, not an asafe run", str_run,
                         Py_TYPE(run)->tp_name);
            Py_DECREF(run);
            return NULL;
        }
        Py_INCREF(state);
        Py_XSETREF(self->state, state);
        Py_XSETREF(self->run, (RunState *)run);
    }
    Py_INCREF(self->run);
    return self->run;
}

/* The clock, in seconds: time.perf_counter's clock read directly, or clock(). */
static int
now_of(Hooks *self, double *now)
{
    if (self->clock == NULL) {
#if PY_VERSION_HEX >= 0x030D0000
        PyTime_t ticks;
        if (PyTime_PerfCounter(&ticks) < 0) {
            return -1;
        }
        *now = PyTime_AsSecondsDouble(ticks);
#else
        *now = _PyTime_AsSecondsDouble(_PyTime_GetPerfCounter());
#endif
        return 0;
    }
    PyObject *value = PyObject_CallNoArgs(self->clock);
    if (value == NULL) {
        return -1;
    }
    if (!PyFloat_CheckExact(value)) {
        PyErr_Format(PyExc_TypeError, "asafe: the clock returned %R, not a float", value);
        Py_DECREF(value);
        return -1;
    }
    *now = PyFloat_AS_DOUBLE(value);
    Py_DECREF(value);
    return 0;
}

/* The functions cache of the inline lookup, run.by_func[getattr(dsk.get(key), "func", None)]:
 * a new reference, or NULL with no error where there is none (a TypeError, e.g. an
 * unhashable callable, counts as none, as in the Python hook). */
static PyObject *
names_of(RunState *run, PyObject *key, PyObject *dsk)
{
    PyObject *task, *func, *names = NULL;
    if (PyDict_CheckExact(dsk)) {
        task = PyDict_GetItemWithError(dsk, key);
        Py_XINCREF(task);
    }
    else {
        task = PyObject_CallMethod(dsk, "get", "O", key);
    }
    if (task == NULL) {
        goto error;
    }
    func = PyObject_GetAttr(task, str_func);
    Py_DECREF(task);
    if (func == NULL) {  /* getattr(task, "func", None) */
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
        }
        goto error;
    }
    names = PyDict_GetItemWithError(run->by_func, func);
    Py_DECREF(func);
    if (names == NULL) {
        goto error;
    }
    Py_INCREF(names);
    return names;
error:
    if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
    }
    return NULL;
}

/* ``group`` (a new reference, stolen) as the Tally of key, or NULL with a TypeError. */
static Tally *
checked_tally(PyObject *group, PyObject *key)
{
    if (!PyObject_TypeCheck(group, &TallyType)) {
        PyErr_Format(PyExc_TypeError, "asafe: the group of %R is a %s, not a Tally", key, Py_TYPE(group)->tp_name);
        Py_DECREF(group);
        return NULL;
    }
    return (Tally *)group;
}

/* ``value`` (a new reference, stolen) as the Entry of key in run.scheduled, or NULL with a TypeError. */
static Entry *
checked_entry(PyObject *value, PyObject *key)
{
    if (!Py_IS_TYPE(value, &EntryType)) {
        PyErr_Format(PyExc_TypeError, "asafe: run.scheduled[%R] is a %s, not an entry of the compiled hooks", key,
                     Py_TYPE(value)->tp_name);
        Py_DECREF(value);
        return NULL;
    }
    return (Entry *)value;
}

/* A task's tally: ``names.get(name)`` where the cache has one, else resolve(run, key, dsk).
 * A new reference. The same lookup as _TrackingCallback._tally_of. */
static Tally *
tally_of(Hooks *self, RunState *run, PyObject *key, PyObject *dsk)
{
    PyObject *tally = NULL;
    PyObject *names = names_of(run, key, dsk);
    if (names == NULL && PyErr_Occurred()) {
        return NULL;
    }
    if (names != NULL && PyDict_CheckExact(names) && PyDict_GET_SIZE(names) > 0) {
        PyObject *name;
        if (PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) > 0) {
            name = PyTuple_GET_ITEM(key, 0);
            Py_INCREF(name);
        }
        else {
            name = PyObject_CallOneArg(self->prefix, key);
        }
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        tally = PyDict_GetItemWithError(names, name);
        Py_DECREF(name);
        if (tally == NULL && PyErr_Occurred()) {
            Py_DECREF(names);
            return NULL;
        }
        Py_XINCREF(tally);
    }
    Py_XDECREF(names);
    if (tally == NULL) {
        PyObject *args[] = {(PyObject *)run, key, dsk};
        tally = PyObject_Vectorcall(self->resolve, args, 3, NULL);
        if (tally == NULL) {
            return NULL;
        }
    }
    return checked_tally(tally, key);
}

/* Pop key from a dict: a new reference, or NULL with no error when absent. */
static PyObject *
pop_item(PyObject *dict, PyObject *key)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *value;
    return PyDict_Pop(dict, key, &value) > 0 ? value : NULL;
#else /* one hash, not two: the values popped here are never None */
    PyObject *value = _PyDict_Pop(dict, key, Py_None);
    if (value == Py_None) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
#endif
}

/* Count a task that has become ready as scheduled: ``run.scheduled[key] = Entry(tally)``
 * and ``tally.added += 1`` (the loop body of _TrackingCallback._schedule). */
static int
schedule_one(Hooks *self, RunState *run, PyObject *key, PyObject *dsk)
{
    Tally *tally = tally_of(self, run, key, dsk);
    if (tally == NULL) {
        return -1;
    }
    Entry *entry = new_entry(tally);
    int status = entry == NULL ? -1 : PyDict_SetItem(run->scheduled, key, (PyObject *)entry);
    if (status == 0) {
        tally->added += 1;
    }
    Py_XDECREF(entry);
    Py_DECREF(tally);
    return status;
}

PyDoc_STRVAR(Hooks_schedule_doc,
"schedule(run, keys, dsk)\n--\n\n"
"Count every task of ``keys`` as scheduled in its tally (the ready tasks at the start of a run).");

static PyObject *
Hooks_schedule(Hooks *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "schedule() takes 3 arguments (run, keys, dsk), got %zd", nargs);
        return NULL;
    }
    if (!PyObject_TypeCheck(args[0], &RunStateType)) {
        PyErr_Format(PyExc_TypeError, "schedule() needs an asafe run, got %s", Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    RunState *run = (RunState *)args[0];
    PyObject *iterator = PyObject_GetIter(args[1]), *key;
    if (iterator == NULL) {
        return NULL;
    }
    while ((key = PyIter_Next(iterator)) != NULL) {
        int status = schedule_one(self, run, key, args[2]);
        Py_DECREF(key);
        if (status < 0) {
            break;
        }
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Note that key started at now: in its entry, or in run.started where it has none. */
static int
note_start(RunState *run, PyObject *key, double now)
{
    PyObject *value = PyDict_GetItemWithError(run->scheduled, key);
    if (value != NULL) {
        Py_INCREF(value);
        Entry *entry = checked_entry(value, key);
        if (entry == NULL) {
            return -1;
        }
        entry->start = now;
        entry->started = 1;
        Py_DECREF(entry);
        return 0;
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    PyObject *start = PyFloat_FromDouble(now);
    int status = start == NULL ? -1 : PyDict_SetItem(run->started, key, start);
    Py_XDECREF(start);
    return status;
}

PyDoc_STRVAR(Hooks_pretask_doc,
"pretask(key, dsk, state)\n--\n\n"
"Note the start time of a task, in its entry of ``state['asafe-run'].scheduled``.");

static PyObject *
Hooks_pretask(Hooks *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "pretask() takes 3 arguments (key, dsk, state), got %zd", nargs);
        return NULL;
    }
    double now;
    if (now_of(self, &now) < 0) {
        return NULL;
    }
    RunState *run = run_of(self, args[2]);
    if (run == NULL) {
        return NULL;
    }
    int status = note_start(run, args[0], now);
    Py_DECREF(run);
    if (status < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The dependents of key that have just become ready (not in state["waiting"]) are
 * counted as scheduled in their tallies. */
static int
add_ready_dependents(Hooks *self, RunState *run, PyObject *key, PyObject *dsk, PyObject *state)
{
    int status = -1;
    PyObject *waiting = NULL, *all_dependents = NULL, *dependents = NULL, *iterator = NULL, *dependent;
    if ((waiting = get_item(state, str_waiting)) == NULL
        || (all_dependents = get_item(state, str_dependents)) == NULL
        || (dependents = get_item(all_dependents, key)) == NULL
        || (iterator = PyObject_GetIter(dependents)) == NULL) {
        goto done;
    }
    while ((dependent = PyIter_Next(iterator)) != NULL) {
        int is_waiting = PyDict_CheckExact(waiting) ? PyDict_Contains(waiting, dependent)
                                                    : PySequence_Contains(waiting, dependent);
        if (is_waiting == 0 && schedule_one(self, run, dependent, dsk) < 0) {
            is_waiting = -1;
        }
        Py_DECREF(dependent);
        if (is_waiting < 0) {
            goto done;
        }
    }
    if (!PyErr_Occurred()) {
        status = 0;
    }
done:
    Py_XDECREF(waiting);
    Py_XDECREF(all_dependents);
    Py_XDECREF(dependents);
    Py_XDECREF(iterator);
    return status;
}

/* The finished task's tally and start time: from its entry (popped from
 * run.scheduled), else the lookup and run.started. A new reference; ``start`` is
 * ``now`` (a zero duration) where the start is not known. */
static Tally *
finished_tally(Hooks *self, RunState *run, PyObject *key, PyObject *dsk, double now, double *start)
{
    *start = now;
    PyObject *popped = pop_item(run->scheduled, key);
    if (popped != NULL) {
        Entry *entry = checked_entry(popped, key);
        if (entry == NULL) {
            return NULL;
        }
        Tally *tally = entry->tally;
        Py_INCREF(tally);
        if (entry->started) {
            *start = entry->start;
        }
        Py_DECREF(entry);
        return tally;
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *started = pop_item(run->started, key);
    if (started != NULL) {
        *start = PyFloat_AsDouble(started);
        Py_DECREF(started);
        if (*start == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    else if (PyErr_Occurred()) {
        return NULL;
    }
    return tally_of(self, run, key, dsk);
}

PyDoc_STRVAR(Hooks_posttask_doc,
"posttask(key, result, dsk, state, worker_id)\n--\n\n"
"Count a finished task and its duration in its tally, count its dependents that\n"
"became ready as scheduled, and call ``flush(run, now)`` once per interval.");

static PyObject *
Hooks_posttask(Hooks *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "posttask() takes 5 arguments (key, result, dsk, state, worker_id), got %zd",
                     nargs);
        return NULL;
    }
    PyObject *key = args[0], *dsk = args[2], *state = args[3];
    PyObject *result = NULL;
    Tally *tally = NULL;
    double now, start;
    if (now_of(self, &now) < 0) {
        return NULL;
    }
    RunState *run = run_of(self, state);
    if (run == NULL) {
        return NULL;
    }
    if ((tally = finished_tally(self, run, key, dsk, now, &start)) == NULL) {
        goto done;
    }
    tally->finished += 1;
    tally->seconds += now - start;
    if (add_ready_dependents(self, run, key, dsk, state) < 0) {
        goto done;
    }
    if (now >= run->next_flush) {
        PyObject *now_object = PyFloat_FromDouble(now);
        if (now_object == NULL) {
            goto done;
        }
        PyObject *flush_args[] = {(PyObject *)run, now_object};
        PyObject *flushed = PyObject_Vectorcall(self->flush, flush_args, 2, NULL);
        Py_DECREF(now_object);
        if (flushed == NULL) {
            goto done;
        }
        Py_DECREF(flushed);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(tally);
    Py_DECREF(run);
    return result;
}

PyDoc_STRVAR(Hooks_forget_doc,
"forget()\n--\n\n"
"Drop the cached run and its state (the end of a run): the hooks then hold no\n"
"reference to either.");

static PyObject *
Hooks_forget(Hooks *self, PyObject *Py_UNUSED(ignored))
{
    Py_CLEAR(self->state);
    Py_CLEAR(self->run);
    Py_RETURN_NONE;
}

static PyMethodDef Hooks_methods[] = {
    {"schedule", (PyCFunction)(void (*)(void))Hooks_schedule, METH_FASTCALL, Hooks_schedule_doc},
    {"pretask", (PyCFunction)(void (*)(void))Hooks_pretask, METH_FASTCALL, Hooks_pretask_doc},
    {"posttask", (PyCFunction)(void (*)(void))Hooks_posttask, METH_FASTCALL, Hooks_posttask_doc},
    {"forget", (PyCFunction)Hooks_forget, METH_NOARGS, Hooks_forget_doc},
    {NULL}
};

static PyTypeObject HooksType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "asafe.schedulers._hotpath.Hooks",
    .tp_doc = PyDoc_STR("Hooks(resolve, flush, prefix, clock=None): the compiled per-task hooks of asafe.schedulers.local."),
    .tp_basicsize = sizeof(Hooks),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Hooks_init,
    .tp_traverse = (traverseproc)Hooks_traverse,
    .tp_clear = (inquiry)Hooks_clear,
    .tp_dealloc = (destructor)Hooks_dealloc,
    .tp_methods = Hooks_methods,
};

/* ----------------------------------------------------------------- module */

static struct PyModuleDef hotpath_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "asafe.schedulers._hotpath",
    .m_doc = PyDoc_STR("The compiled per-task hooks of asafe.schedulers.local (see the comment atop _hotpath.c)."),
    .m_size = -1,
};

static int
add_type(PyObject *module, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0) {
        return -1;
    }
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC
PyInit__hotpath(void)
{
    if ((str_run = PyUnicode_InternFromString("asafe-run")) == NULL
        || (str_waiting = PyUnicode_InternFromString("waiting")) == NULL
        || (str_dependents = PyUnicode_InternFromString("dependents")) == NULL
        || (str_func = PyUnicode_InternFromString("func")) == NULL) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&hotpath_module);
    if (module == NULL) {
        return NULL;
    }
    if (add_type(module, &TallyType, "Tally") < 0
        || add_type(module, &RunStateType, "RunState") < 0
        || add_type(module, &EntryType, "Entry") < 0
        || add_type(module, &HooksType, "Hooks") < 0
        || PyModule_AddObjectRef(module, "RUN_KEY", str_run) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
