/*
 * asafe.schedulers._taskpath: the compiled per-task path of the distributed scheduler plugin.
 *
 * Design
 * ------
 * A Dask scheduler is one Python thread, and the scheduler plugin's
 * ``transition`` hook runs on it for every transition of every task. Measured
 * by part (docs/results/workloads/ablation-s32), no part of the hook's 10 us a
 * transition was more than about a fifth: the cost was the interpreter's work
 * over the whole path (the dispatch on the transition's kind, the entry of a
 * task that becomes ready, the next wave of its dependents, a finished task's
 * ``startstops``, the forecast's and the event batch's bookkeeping).
 *
 * ``TaskPath(plugin, Scheduled, walk).transition`` is that routing in C (and
 * ``.arrive`` the part of update_graph per task, with ``.enter``, ``.join_wave``,
 * ``.submitted`` the twins it calls): the same statements as
 * AdaptiveSchedulerPlugin.transition, _arrive, _enter, _became_ready,
 * _join_wave, _prior and the common path of _finish
 * (asafe/schedulers/scheduler_plugin.py, the reference and the fallback), in
 * the same order, on the same objects. The common paths of three parts it
 * feeds are inlined, each only on an object of the part's own class (another
 * object, a test's stand-in, goes through its methods):
 *
 * - EventBatch.add and .finish of a group that has a tally (a new group, an
 *   unhashable one, a duration out of range go to the batch's methods);
 * - TransferForecast.finished (the task's own planned transfers refined with
 *   its place and size, the transfers into it served, whether each crossed
 *   learned), .activate, .released, and .submitted with its _edge (the plan
 *   of an arriving graph, which update_graph calls through TaskPath.submitted);
 *   an output forecast from its prefix's history (no consumer submitted yet)
 *   is refined and planned by the forecast's Python methods; its
 *   _bandwidth_now where the link estimate (a LinkEstimate) has measured a
 *   transfer, and _place of an output nothing holds and nothing pins;
 * - P2PTraffic.active_at and .pending.
 *
 * Arithmetic on those objects' numbers is Python's (PyNumber_*), so the floats
 * are the same to the last bit. (A method patched on one of those three
 * objects' instances is not seen; nothing in asafe or its tests does that.) The plugin's Python methods take what is
 * rare: a task with annotations (_type_of), a prefix not read since the latest
 * graph (_prior), a task that leaves without finishing (_discard), a task that
 * finishes without an entry (_finish), the P2P meter's events (_p2p_event), the
 * measured transfers (_charge_transfers), a failure (_hook_failed, _settle),
 * and the runtime's evaluation when it is due.
 *
 * Two rules keep it the plugin's behaviour, not a second one:
 *
 * - a method of the twinned six (_arrive, _enter, _finish, _became_ready,
 *   _join_wave, _maybe_evaluate) that is set on the plugin instance (a test, a
 *   user's patch) is called instead of the twin, as Python's lookup would;
 * - the plugin's settings (expected_transfers, next_wave, transfer_correction,
 *   evaluate_interval) and its evaluation clock (_next_evaluation) are read
 *   from the instance at each use, so changing them takes effect as in Python.
 *
 * An exception is handled as the Python hook's ``except Exception``: it is made
 * the exception being handled (sys.exc_info) while _hook_failed logs and counts
 * it, then _settle runs if nothing is scheduled; a BaseException that is not an
 * Exception propagates. The scheduler plugin installs the twin only on an
 * instance of its own class (a subclass keeps the Python path it may override).
 * tests/distributed/test_taskpath.py runs the twin and the Python path side by
 * side on one real scheduler and compares what they count after every
 * transition. Measured (docs/results/taskpath-s33): the hooks' thread cpu per
 * graph 5-24% lower on graphs of many tasks (16-21% on the smooth field, 7-24%
 * on random data, 5-18% on int ids).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define WAVE_FAN_IN 32 /* scheduler_plugin._WAVE_FAN_IN */

static PyObject *s_attached, *s_scheduled, *s_count_runnable, *s_expected_transfers, *s_next_wave,
    *s_transfer_correction, *s_evaluate_interval, *s_next_evaluation, *s_events, *s_default_type;
static PyObject *s_enter, *s_finish, *s_became_ready, *s_join_wave, *s_maybe_evaluate, *s_type_of, *s_prior,
    *s_discard, *s_settle, *s_p2p_event, *s_hook_failed, *s_charge_transfers;
static PyObject *s_ready, *s_task_type, *s_prefix, *s_reuse, *s_name, *s_key, *s_state, *s_run_spec,
    *s_annotations, *s_dependencies, *s_dependents;
static PyObject *s_finish_event, *s_add, *s_remove, *s_activate, *s_finished, *s_released, *s_active_at, *s_evaluate,
    *s_input_finished, *s_pending, *s_recent_count, *s_link;
static PyObject *s_startstops, *s_metadata, *s_nbytes, *s_worker, *s_action, *s_compute, *s_transfer, *s_start,
    *s_stop, *s_prior_kw, *s_finished_kw;
static PyObject *s_waiting, *s_released_state, *s_memory, *s_processing, *s_queued, *s_no_worker;
static PyObject *s_communication, *s_metadata_key, *s_hook_name, *s_get;
static PyObject *kw_prior;    /* ("prior",) */
static PyObject *kw_finished; /* ("finished",) */
static PyObject *kw_ready;    /* ("ready",) */
static PyObject *float_zero;
static PyObject *long_zero;
static PyObject *uncompressed_seconds; /* asafe.schedulers.protocol.uncompressed_seconds */
static PyObject *long_one;
static PyTypeObject *batch_type;   /* asafe.core.tracker.EventBatch */
static double max_seconds;         /* asafe.core.tracker.MAX_SECONDS */
static PyTypeObject *p2p_type;     /* asafe.schedulers.p2p.P2PTraffic */
static PyObject *is_barrier_fn;    /* asafe.schedulers.p2p.is_barrier */
static PyTypeObject *forecast_type; /* asafe.schedulers.forecast.TransferForecast */
static PyObject *learn_rate;       /* asafe.schedulers.forecast._LEARN */
static PyObject *size_learn_rate;  /* asafe.schedulers.forecast._LEARN_SIZE */
static PyObject *s_outputs, *s_output_bytes, *s_crossed_bytes, *s_shipped, *s_edges, *s_active, *s_home, *s_items, *s_planned_total,
    *s_consumer, *s_forecast, *s_bandwidth_now, *s_refine;
static PyObject *float_one;
static PyObject *output_type, *place_of, *pinned_of; /* forecast._Output, forecast._place, forecast._pinned */
static PyObject *s_workers_call, *s_memory_size, *s_worker_restrictions, *s_set_forecast, *s_submitted;
static PyObject *s_tallies, *s_priors, *s_run_types, *s_run_seconds, *s_run_counts, *s_planned, *s_recent;
/* _arrive; forecast._bandwidth, LinkEstimate.measured, ts.who_has */
static PyObject *s_arrive, *s_bandwidth_call, *s_measured, *s_who_has;
static PyTypeObject *link_type;   /* asafe.schedulers.bandwidth.LinkEstimate */
static PyTypeObject *memory_type; /* asafe.schedulers.forecast.PrefixMemory */
static PyObject *s_link_memory, *s_remembered; /* LinkEstimate.memory, PrefixMemory.bandwidth */
static PyObject *s_min_bytes; /* TransferForecast.min_bytes */

typedef struct {
    PyObject_HEAD
    PyObject *plugin;
    PyObject *pdict;     /* plugin.__dict__: its settings, parts and patches */
    PyObject *scheduled; /* plugin._scheduled */
    PyObject *tasks;     /* scheduler.tasks */
    PyObject *priors;    /* plugin._priors */
    PyObject *forecast, *p2p, *reuse, *runnable, *runtime;
    PyObject *entry_type; /* scheduler_plugin.Scheduled */
    PyObject *walk;       /* asafe.core.types._walk */
    PyObject *clock;      /* time.monotonic */
} TaskPath;

/* ---------------------------------------------------------------- helpers */

/* An attribute of the plugin: its instance dict first (a new reference; NULL with an error set). */
static PyObject *
pget(TaskPath *self, PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(self->pdict, name);
    if (value != NULL) {
        Py_INCREF(value);
        return value;
    }
    if (PyErr_Occurred())
        return NULL;
    return PyObject_GetAttr(self->plugin, name);
}

/* bool(plugin.<name>): 1, 0, or -1 on error. */
static int
ptrue(TaskPath *self, PyObject *name)
{
    PyObject *value = pget(self, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* bool(obj.<name>): 1, 0, or -1 on error. */
static int
attr_true(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* A method set on the plugin instance (a patch), borrowed, or NULL (none; an error only if PyErr_Occurred). */
static PyObject *
patched(TaskPath *self, PyObject *name)
{
    return PyDict_GetItemWithError(self->pdict, name);
}

/* Call a method set on the plugin instance (a patch) with one argument, if there is one: 1 (no patch: the twin
 * runs), 0 (the patch ran), -1 (an error). */
static int
run_patch(TaskPath *self, PyObject *name, PyObject *arg)
{
    PyObject *patch = patched(self, name);
    if (patch == NULL)
        return PyErr_Occurred() ? -1 : 1;
    PyObject *result = PyObject_CallOneArg(patch, arg);
    Py_XDECREF(result);
    return result ? 0 : -1;
}

/* Call plugin.<name>(*args): its instance attribute or the class's method. Returns a new reference. */
static PyObject *
call_plugin(TaskPath *self, PyObject *name, PyObject *const *args, size_t nargs)
{
    PyObject *stack[8];
    stack[0] = self->plugin;
    for (size_t i = 0; i < nargs; i++)
        stack[i + 1] = args[i];
    return PyObject_VectorcallMethod(name, stack, (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* obj.<name>(*args) with optional keyword names: a new reference. */
static PyObject *
call_method(PyObject *obj, PyObject *name, PyObject *const *args, size_t nargs, PyObject *kwnames)
{
    PyObject *stack[8];
    stack[0] = obj;
    size_t total = nargs + (kwnames ? (size_t)PyTuple_GET_SIZE(kwnames) : 0);
    for (size_t i = 0; i < total; i++)
        stack[i + 1] = args[i];
    return PyObject_VectorcallMethod(name, stack, (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
}

/* The same as call_method, the result discarded: 0, or -1 on error. */
static int
call_void(PyObject *obj, PyObject *name, PyObject *const *args, size_t nargs, PyObject *kwnames)
{
    PyObject *result = call_method(obj, name, args, nargs, kwnames);
    if (result == NULL)
        return -1;
    Py_DECREF(result);
    return 0;
}

static int
plugin_void(TaskPath *self, PyObject *name, PyObject *const *args, size_t nargs)
{
    PyObject *result = call_plugin(self, name, args, nargs);
    if (result == NULL)
        return -1;
    Py_DECREF(result);
    return 0;
}

/* a == b for two objects, as Python's ==: 1, 0, or -1. Identical str objects compare at once. */
static int
equal(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b))
        return PyUnicode_Compare(a, b) == 0 ? 1 : (PyErr_Occurred() ? -1 : 0);
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* The value of keyword ``name`` in a vectorcall's keywords (borrowed), or NULL. */
static PyObject *
keyword(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject *name)
{
    if (kwnames == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyTuple_GET_ITEM(kwnames, i) == name)
            return args[nargs + i];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, i), name) == 0)
            return args[nargs + i];
    }
    return NULL;
}

/* The keywords as the dict Python's **kwargs would make (a new reference). */
static PyObject *
keywords_dict(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *kwargs = PyDict_New();
    if (kwargs == NULL || kwnames == NULL)
        return kwargs;
    Py_ssize_t n = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
            Py_DECREF(kwargs);
            return NULL;
        }
    }
    return kwargs;
}

/* ------------------------------------------------- the event batch's tallies */

/* The batch's tally of (task_type, prefix), borrowed (NULL: none; an error only if PyErr_Occurred). The key
 * (a new reference) is left in *key. An unhashable group is "none" here, with no error: the batch's own
 * method handles it (it catches the same TypeError). */
static PyObject *
tally_of(PyObject *events, PyObject *task_type, PyObject *prefix, PyObject **key)
{
    *key = NULL;
    PyObject *tallies = PyObject_GetAttr(events, s_tallies);
    if (tallies == NULL)
        return NULL;
    PyObject *tally = NULL;
    if (PyDict_CheckExact(tallies) && (*key = PyTuple_Pack(2, task_type, prefix)) != NULL) {
        tally = PyDict_GetItemWithError(tallies, *key);
        if (tally == NULL && PyErr_ExceptionMatches(PyExc_TypeError))
            PyErr_Clear();
        if (tally != NULL && !(PyList_CheckExact(tally) && PyList_GET_SIZE(tally) == 3))
            tally = NULL;
    }
    Py_DECREF(tallies); /* the batch holds the dict, and the dict the tally */
    return tally;
}

/* _events.add(task_type, prefix, prior=prior): EventBatch.add's common path (a group with a tally) here, the
 * rest (a new group, an unhashable one, another kind of batch) by its method. 0 or -1. */
static int
events_add(PyObject *events, PyObject *task_type, PyObject *prefix, PyObject *prior)
{
    if (Py_IS_TYPE(events, batch_type)) {
        PyObject *key;
        PyObject *tally = tally_of(events, task_type, prefix, &key);
        if (tally == NULL && PyErr_Occurred()) {
            Py_XDECREF(key);
            return -1;
        }
        if (tally != NULL) {
            PyObject *old = PyList_GET_ITEM(tally, 0);
            PyObject *count = PyNumber_InPlaceAdd(old, long_one);
            int status = -1;
            if (count != NULL) {
                PyList_SET_ITEM(tally, 0, count);
                Py_DECREF(old);
                status = 0;
                if (prior != Py_None) {
                    PyObject *priors = PyObject_GetAttr(events, s_priors);
                    status = priors != NULL ? PyObject_SetItem(priors, key, prior) : -1;
                    Py_XDECREF(priors);
                }
            }
            Py_DECREF(key);
            return status;
        }
        Py_XDECREF(key);
    }
    PyObject *args[3] = {task_type, prefix, prior};
    return call_void(events, s_add, args, 2, kw_prior);
}

/* _events.finish(task_type, prefix, duration): EventBatch.finish's common path here (a float duration in
 * range, a group with a tally), the rest by its method. 0 or -1. */
static int
events_finish(PyObject *events, PyObject *task_type, PyObject *prefix, PyObject *duration)
{
    if (Py_IS_TYPE(events, batch_type) && PyFloat_CheckExact(duration) && PyFloat_AS_DOUBLE(duration) >= 0.0 &&
        PyFloat_AS_DOUBLE(duration) <= max_seconds) {
        PyObject *key;
        PyObject *tally = tally_of(events, task_type, prefix, &key);
        Py_XDECREF(key);
        if (tally == NULL && PyErr_Occurred())
            return -1;
        if (tally != NULL) {
            PyObject *one = PyList_GET_ITEM(tally, 1), *seconds = PyList_GET_ITEM(tally, 2);
            PyObject *count = PyNumber_InPlaceAdd(one, long_one);
            if (count == NULL)
                return -1;
            PyObject *total = PyNumber_InPlaceAdd(seconds, duration);
            if (total == NULL) {
                Py_DECREF(count);
                return -1;
            }
            PyList_SET_ITEM(tally, 1, count);
            PyList_SET_ITEM(tally, 2, total);
            Py_DECREF(one);
            Py_DECREF(seconds);
            /* the finishes in order, consecutive ones of a type summed */
            PyObject *types = PyObject_GetAttr(events, s_run_types);
            PyObject *run_seconds = types ? PyObject_GetAttr(events, s_run_seconds) : NULL;
            PyObject *run_counts = run_seconds ? PyObject_GetAttr(events, s_run_counts) : NULL;
            int status = -1;
            if (run_counts != NULL && PyList_CheckExact(types) && PyList_CheckExact(run_seconds) &&
                PyList_CheckExact(run_counts)) {
                Py_ssize_t n = PyList_GET_SIZE(types);
                int same = n > 0 ? equal(PyList_GET_ITEM(types, n - 1), task_type) : 0;
                if (same > 0 && PyList_GET_SIZE(run_seconds) >= n && PyList_GET_SIZE(run_counts) >= n) {
                    Py_ssize_t last_seconds = PyList_GET_SIZE(run_seconds) - 1, last_count = PyList_GET_SIZE(run_counts) - 1;
                    PyObject *old_seconds = PyList_GET_ITEM(run_seconds, last_seconds);
                    PyObject *old_count = PyList_GET_ITEM(run_counts, last_count);
                    PyObject *new_seconds = PyNumber_InPlaceAdd(old_seconds, duration);
                    PyObject *new_count = new_seconds ? PyNumber_InPlaceAdd(old_count, long_one) : NULL;
                    if (new_count != NULL) {
                        PyList_SET_ITEM(run_seconds, last_seconds, new_seconds);
                        PyList_SET_ITEM(run_counts, last_count, new_count);
                        Py_DECREF(old_seconds);
                        Py_DECREF(old_count);
                        status = 0;
                    } else {
                        Py_XDECREF(new_seconds);
                    }
                } else if (same == 0) {
                    if (PyList_Append(types, task_type) == 0 && PyList_Append(run_seconds, duration) == 0 &&
                        PyList_Append(run_counts, long_one) == 0)
                        status = 0;
                }
            } else if (run_counts != NULL) {
                PyErr_SetString(PyExc_TypeError, "EventBatch's runs are not lists");
            }
            Py_XDECREF(types);
            Py_XDECREF(run_seconds);
            Py_XDECREF(run_counts);
            return status;
        }
    }
    PyObject *args[3] = {task_type, prefix, duration};
    return call_void(events, s_finish_event, args, 3, NULL);
}

/* p2p.active_at(now): P2PTraffic's ``bool(self._planned) or now < self._recent`` here, another meter by its
 * method. 1, 0, or -1. */
static int
p2p_active_at(PyObject *p2p, PyObject *now)
{
    if (Py_IS_TYPE(p2p, p2p_type)) {
        int pending = attr_true(p2p, s_planned);
        if (pending != 0)
            return pending;
        PyObject *recent = PyObject_GetAttr(p2p, s_recent);
        if (recent == NULL)
            return -1;
        int lingering = PyObject_RichCompareBool(now, recent, Py_LT);
        Py_DECREF(recent);
        return lingering;
    }
    PyObject *active = call_method(p2p, s_active_at, &now, 1, NULL);
    if (active == NULL)
        return -1;
    int truth = PyObject_IsTrue(active);
    Py_DECREF(active);
    return truth;
}

/* ---------------------------------------------------------- the forecast */

/* forecast._learn(table, prefix, value, rate): the moving average of ``prefix`` in ``table`` moves towards
 * ``value`` (a float) by ``rate`` (the crossing fraction's, or _LEARN_SIZE for output sizes); the first value
 * sets it. Python's float arithmetic, step by step. 0 or -1. */
static int
learn_at(PyObject *table, PyObject *prefix, PyObject *value, PyObject *rate)
{
    PyObject *old = PyDict_GetItemWithError(table, prefix);
    if (old == NULL) {
        if (PyErr_Occurred())
            return -1;
        return PyDict_SetItem(table, prefix, value);
    }
    Py_INCREF(old);
    PyObject *difference = PyNumber_Subtract(value, old);
    PyObject *step = difference ? PyNumber_Multiply(rate, difference) : NULL;
    PyObject *moved = step ? PyNumber_Add(old, step) : NULL;
    Py_DECREF(old);
    Py_XDECREF(difference);
    Py_XDECREF(step);
    if (moved == NULL)
        return -1;
    int status = PyDict_SetItem(table, prefix, moved);
    Py_DECREF(moved);
    return status;
}

/* forecast._unplan(seconds): one planned item leaves; none left: exactly zero. 0 or -1. */
static int
unplan(PyObject *forecast, PyObject *seconds)
{
    PyObject *items = PyObject_GetAttr(forecast, s_items);
    PyObject *left = items ? PyNumber_Subtract(items, long_one) : NULL;
    Py_XDECREF(items);
    if (left == NULL)
        return -1;
    int some = PyObject_RichCompareBool(left, long_zero, Py_GT);
    int status = -1;
    if (some > 0) {
        PyObject *planned = PyObject_GetAttr(forecast, s_planned_total);
        PyObject *less = planned ? PyNumber_InPlaceSubtract(planned, seconds) : NULL;
        Py_XDECREF(planned);
        if (less != NULL && PyObject_SetAttr(forecast, s_items, left) == 0)
            status = PyObject_SetAttr(forecast, s_planned_total, less);
        Py_XDECREF(less);
    } else if (some == 0) {
        if (PyObject_SetAttr(forecast, s_items, long_zero) == 0)
            status = PyObject_SetAttr(forecast, s_planned_total, float_zero);
    }
    Py_DECREF(left);
    return status;
}

/* dict.pop(key, None) of a dict: a new reference or NULL (none; an error only if PyErr_Occurred). */
static PyObject *
pop_item(PyObject *dict, PyObject *key)
{
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (value == NULL)
        return NULL;
    Py_INCREF(value);
    if (PyDict_DelItem(dict, key) < 0) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
}

/* forecast._crossing_rate(out): _LEARN * min(out.nbytes / output_bytes[prefix], 1.0) where both are known and
 * the typical size is not 0, else _LEARN (a new reference). */
static PyObject *
crossing_rate(PyObject *forecast, PyObject *out, PyObject *prefix)
{
    PyObject *nbytes = PyObject_GetAttr(out, s_nbytes);
    if (nbytes == NULL)
        return NULL;
    PyObject *table = nbytes != Py_None ? PyObject_GetAttr(forecast, s_output_bytes) : NULL;
    if (nbytes != Py_None && table == NULL) {
        Py_DECREF(nbytes);
        return NULL;
    }
    PyObject *typical = table ? PyDict_GetItemWithError(table, prefix) : NULL; /* borrowed */
    PyObject *rate = NULL;
    if (typical == NULL && PyErr_Occurred()) {
        rate = NULL;
    } else if (typical == NULL || nbytes == Py_None) {
        rate = Py_NewRef(learn_rate);
    } else {
        int some = PyObject_IsTrue(typical);
        if (some == 0) {
            rate = Py_NewRef(learn_rate);
        } else if (some > 0) {
            PyObject *share = PyNumber_TrueDivide(nbytes, typical);
            int above = share ? PyObject_RichCompareBool(share, float_one, Py_GT) : -1; /* min(share, 1.0) */
            if (above >= 0)
                rate = PyNumber_Multiply(learn_rate, above ? float_one : share);
            Py_XDECREF(share);
        }
    }
    Py_DECREF(nbytes);
    Py_XDECREF(table);
    return rate;
}

/* forecast._served(ts, worker, learn=True): the transfers into a finished task are done. 0 or -1. */
static int
served(PyObject *forecast, PyObject *outputs, PyObject *ts, PyObject *dependencies, PyObject *worker)
{
    int status = -1;
    PyObject *shipped = NULL, *consumer = NULL, *iterator = NULL, *dts = NULL, *out = NULL, *edges = NULL,
             *edge = NULL, *home = NULL;
    if ((shipped = PyObject_GetAttr(forecast, s_shipped)) == NULL || (iterator = PyObject_GetIter(dependencies)) == NULL)
        goto done;
    while ((dts = PyIter_Next(iterator)) != NULL) {
        PyObject *dkey = PyObject_GetAttr(dts, s_key);
        if (dkey == NULL)
            goto done;
        out = PyDict_GetItemWithError(outputs, dkey);
        Py_DECREF(dkey);
        if (out == NULL) {
            if (PyErr_Occurred())
                goto done;
            Py_CLEAR(dts);
            continue;
        }
        Py_INCREF(out);
        if ((edges = PyObject_GetAttr(out, s_edges)) == NULL)
            goto done;
        if (!PyDict_CheckExact(edges)) {
            PyErr_SetString(PyExc_TypeError, "a forecast output's edges are not a dict");
            goto done;
        }
        if (worker != Py_None && (edge = pop_item(edges, worker)) == NULL && PyErr_Occurred())
            goto done;
        if (edge == NULL && PyDict_GET_SIZE(edges) > 0) {
            if (consumer == NULL) {
                PyObject *key = PyObject_GetAttr(ts, s_key);
                if (key == NULL)
                    goto done;
                consumer = PyTuple_Pack(2, s_consumer, key);
                Py_DECREF(key);
                if (consumer == NULL)
                    goto done;
            }
            if ((edge = pop_item(edges, consumer)) == NULL && PyErr_Occurred())
                goto done;
        }
        if (edge != NULL) {
            int is_active = attr_true(out, s_active);
            if (is_active < 0)
                goto done;
            if (is_active) {
                PyObject *seconds = PySequence_GetItem(edge, 1);
                int unplanned = seconds ? unplan(forecast, seconds) : -1;
                Py_XDECREF(seconds);
                if (unplanned < 0)
                    goto done;
            }
        }
        if ((home = PyObject_GetAttr(out, s_home)) == NULL)
            goto done;
        if (home != Py_None && worker != Py_None) {
            int there = PySequence_Contains(home, worker);
            PyObject *prefix = there >= 0 ? PyObject_GetAttr(out, s_prefix) : NULL;
            if (prefix == NULL)
                goto done;
            PyObject *crossed = PyFloat_FromDouble(there ? 0.0 : 1.0); /* float(worker not in out.home) */
            PyObject *rate = crossed ? crossing_rate(forecast, out, prefix) : NULL;
            int learned = rate ? learn_at(shipped, prefix, crossed, rate) : -1;
            if (learned == 0 && !there) { /* crossed: its size, where known, into crossed_bytes */
                PyObject *size = PyObject_GetAttr(out, s_nbytes);
                PyObject *table = size && size != Py_None ? PyObject_GetAttr(forecast, s_crossed_bytes) : NULL;
                if (size == NULL || (size != Py_None && (table == NULL || learn_at(table, prefix, size, size_learn_rate) < 0)))
                    learned = -1;
                Py_XDECREF(table);
                Py_XDECREF(size);
            }
            Py_DECREF(prefix);
            Py_XDECREF(crossed);
            Py_XDECREF(rate);
            if (learned < 0)
                goto done;
        }
        Py_CLEAR(home);
        Py_CLEAR(edge);
        Py_CLEAR(edges);
        Py_CLEAR(out);
        Py_CLEAR(dts);
    }
    if (!PyErr_Occurred())
        status = 0;
done:
    Py_XDECREF(shipped);
    Py_XDECREF(consumer);
    Py_XDECREF(iterator);
    Py_XDECREF(dts);
    Py_XDECREF(out);
    Py_XDECREF(edges);
    Py_XDECREF(edge);
    Py_XDECREF(home);
    return status;
}

static int produced(PyObject *forecast, PyObject *out, PyObject *worker, PyObject *logical);

/* forecast.finished(ts, worker, logical): TransferForecast.finished (and its _produced, _served) here. */
static int
forecast_finished(PyObject *forecast, PyObject *ts, PyObject *worker, PyObject *logical)
{
    PyObject *outputs = NULL, *key = NULL, *dependencies = NULL;
    int status = -1;
    if (!Py_IS_TYPE(forecast, forecast_type) || (outputs = PyObject_GetAttr(forecast, s_outputs)) == NULL ||
        !PyDict_CheckExact(outputs)) {
        if (PyErr_Occurred())
            goto done;
        PyObject *args[3] = {ts, worker, logical};
        status = call_void(forecast, s_finished, args, 3, NULL);
        goto done;
    }
    if ((key = PyObject_GetAttr(ts, s_key)) == NULL)
        goto done;
    PyObject *out = PyDict_GetItemWithError(outputs, key);
    if (out == NULL && PyErr_Occurred())
        goto done;
    if (out != NULL) { /* its own output plans transfers: where it is and its size refine them */
        Py_INCREF(out);
        int made = produced(forecast, out, worker, logical);
        Py_DECREF(out);
        if (made < 0)
            goto done;
    }
    if (logical != Py_None) {
        int sized = PyObject_RichCompareBool(logical, long_zero, Py_GE);
        if (sized < 0)
            goto done;
        if (sized) {
            PyObject *table = PyObject_GetAttr(forecast, s_output_bytes);
            PyObject *prefix = table ? PyObject_GetAttr(ts, s_prefix) : NULL;
            PyObject *name = prefix ? PyObject_GetAttr(prefix, s_name) : NULL;
            PyObject *value = name ? PyNumber_Float(logical) : NULL;
            int learned = value ? learn_at(table, name, value, size_learn_rate) : -1;
            Py_XDECREF(table);
            Py_XDECREF(prefix);
            Py_XDECREF(name);
            Py_XDECREF(value);
            if (learned < 0)
                goto done;
        }
    }
    if ((dependencies = PyObject_GetAttr(ts, s_dependencies)) == NULL)
        goto done;
    int some = PyObject_IsTrue(dependencies);
    if (some < 0)
        goto done;
    status = some ? served(forecast, outputs, ts, dependencies, worker) : 0;
done:
    Py_XDECREF(outputs);
    Py_XDECREF(key);
    Py_XDECREF(dependencies);
    return status;
}

/* forecast.released(key): TransferForecast.released here (an output it keeps leaves: what it planned goes). */
static int
forecast_released(PyObject *forecast, PyObject *key)
{
    if (!Py_IS_TYPE(forecast, forecast_type))
        return call_void(forecast, s_released, &key, 1, NULL);
    PyObject *outputs = PyObject_GetAttr(forecast, s_outputs);
    if (outputs == NULL)
        return -1;
    if (!PyDict_CheckExact(outputs)) {
        Py_DECREF(outputs);
        return call_void(forecast, s_released, &key, 1, NULL);
    }
    PyObject *out = pop_item(outputs, key);
    Py_DECREF(outputs);
    if (out == NULL)
        return PyErr_Occurred() ? -1 : 0;
    int status = -1;
    PyObject *edges = NULL, *planned_forecast = NULL;
    int is_active = attr_true(out, s_active);
    if (is_active <= 0) {
        status = is_active;
        goto done;
    }
    if ((edges = PyObject_GetAttr(out, s_edges)) == NULL)
        goto done;
    if (!PyDict_CheckExact(edges)) {
        PyErr_SetString(PyExc_TypeError, "a forecast output's edges are not a dict");
        goto done;
    }
    Py_ssize_t position = 0;
    PyObject *where, *edge;
    while (PyDict_Next(edges, &position, &where, &edge)) {
        PyObject *seconds = PySequence_GetItem(edge, 1);
        int unplanned = seconds ? unplan(forecast, seconds) : -1;
        Py_XDECREF(seconds);
        if (unplanned < 0)
            goto done;
    }
    if ((planned_forecast = PyObject_GetAttr(out, s_forecast)) == NULL)
        goto done;
    int some = PyObject_IsTrue(planned_forecast);
    if (some < 0 || (some && unplan(forecast, planned_forecast) < 0))
        goto done;
    status = 0;
done:
    Py_DECREF(out);
    Py_XDECREF(edges);
    Py_XDECREF(planned_forecast);
    return status;
}

/* forecast.activate(ts): TransferForecast.activate here for an output it keeps or a task with consumers; a
 * task without consumers (its forecast from the prefix's history) by its method. 0 or -1. */
static int
forecast_activate(PyObject *forecast, PyObject *ts)
{
    if (!Py_IS_TYPE(forecast, forecast_type))
        return call_void(forecast, s_activate, &ts, 1, NULL);
    int status = -1;
    PyObject *outputs = NULL, *key = NULL, *out = NULL, *edges = NULL, *planned = NULL, *items = NULL;
    if ((outputs = PyObject_GetAttr(forecast, s_outputs)) == NULL || (key = PyObject_GetAttr(ts, s_key)) == NULL)
        goto done;
    if (!PyDict_CheckExact(outputs)) {
        status = call_void(forecast, s_activate, &ts, 1, NULL);
        goto done;
    }
    out = PyDict_GetItemWithError(outputs, key);
    if (out == NULL) {
        if (PyErr_Occurred())
            goto done;
        int consumed = attr_true(ts, s_dependents);
        if (consumed != 0) /* its consumers are known and plan nothing from it */
            status = consumed < 0 ? -1 : 0;
        else
            status = call_void(forecast, s_activate, &ts, 1, NULL);
        goto done;
    }
    Py_INCREF(out);
    int is_active = attr_true(out, s_active);
    if (is_active != 0) {
        status = is_active < 0 ? -1 : 0;
        goto done;
    }
    if (PyObject_SetAttr(out, s_active, Py_True) < 0 || (edges = PyObject_GetAttr(out, s_edges)) == NULL)
        goto done;
    if (!PyDict_CheckExact(edges)) {
        PyErr_SetString(PyExc_TypeError, "a forecast output's edges are not a dict");
        goto done;
    }
    Py_ssize_t count = PyDict_GET_SIZE(edges);
    if (count == 0) {
        status = 0;
        goto done;
    }
    if ((planned = PyObject_GetAttr(forecast, s_planned_total)) == NULL)
        goto done;
    Py_ssize_t position = 0;
    PyObject *where, *edge;
    while (PyDict_Next(edges, &position, &where, &edge)) {
        PyObject *seconds = PySequence_GetItem(edge, 1);
        PyObject *sum = seconds ? PyNumber_InPlaceAdd(planned, seconds) : NULL;
        Py_XDECREF(seconds);
        if (sum == NULL)
            goto done;
        Py_SETREF(planned, sum);
    }
    if (PyObject_SetAttr(forecast, s_planned_total, planned) < 0 || (items = PyObject_GetAttr(forecast, s_items)) == NULL)
        goto done;
    PyObject *added = PyLong_FromSsize_t(count);
    PyObject *total = added ? PyNumber_InPlaceAdd(items, added) : NULL;
    Py_XDECREF(added);
    if (total == NULL)
        goto done;
    status = PyObject_SetAttr(forecast, s_items, total);
    Py_DECREF(total);
done:
    Py_XDECREF(outputs);
    Py_XDECREF(key);
    Py_XDECREF(out);
    Py_XDECREF(edges);
    Py_XDECREF(planned);
    Py_XDECREF(items);
    return status;
}

/* A float > 0 read from obj.<name> (a new reference), or NULL: none (an error only if PyErr_Occurred). */
static PyObject *
positive_float(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value != NULL && !(PyFloat_CheckExact(value) && PyFloat_AS_DOUBLE(value) > 0.0))
        Py_CLEAR(value);
    return value;
}

/* forecast._bandwidth_now(): ``float(self._bandwidth() or 0.0)``, 1e8 where not > 0. Read here where the
 * forecast's _bandwidth is a LinkEstimate (its own class) whose __call__ returns a float > 0 as it is: its
 * ``measured`` (this installation measured a transfer), else, while that is None, the ``bandwidth`` its
 * PrefixMemory remembered from an earlier installation; else by the method. A new reference. */
static PyObject *
bandwidth_now(PyObject *forecast)
{
    PyObject *link = PyObject_GetAttr(forecast, s_bandwidth_call);
    if (link == NULL)
        return NULL;
    PyObject *found = NULL;
    if (Py_IS_TYPE(link, link_type)) {
        PyObject *measured = PyObject_GetAttr(link, s_measured);
        if (measured != NULL && PyFloat_CheckExact(measured) && PyFloat_AS_DOUBLE(measured) > 0.0) {
            found = measured;
        } else if (measured == Py_None) {
            PyObject *memory = PyObject_GetAttr(link, s_link_memory);
            if (memory != NULL && Py_IS_TYPE(memory, memory_type))
                found = positive_float(memory, s_remembered);
            Py_XDECREF(memory);
        }
        if (found == NULL)
            Py_XDECREF(measured);
    }
    Py_DECREF(link);
    if (found != NULL || PyErr_Occurred())
        return found;
    return call_method(forecast, s_bandwidth_now, NULL, 0, NULL);
}

/* forecast._place(ts): None where nothing holds the output and it is pinned nowhere (a task not run yet,
 * the common case), read here; else by the function. A new reference. */
static PyObject *
place(PyObject *ts)
{
    int held = attr_true(ts, s_who_has);
    if (held < 0)
        return NULL;
    if (!held) {
        int restricted = attr_true(ts, s_worker_restrictions);
        if (restricted < 0)
            return NULL;
        if (!restricted)
            Py_RETURN_NONE;
    }
    return PyObject_CallOneArg(place_of, ts);
}

/* forecast._refine(out) of an output without a forecast from history: its planned transfers with its real
 * size and place, at bandwidth_now. 0 or -1. */
static int
refine(PyObject *forecast, PyObject *out, PyObject *home, PyObject *nbytes)
{
    int status = -1;
    PyObject *bandwidth = NULL, *edges = NULL, *planned = NULL;
    if ((bandwidth = bandwidth_now(forecast)) == NULL || (edges = PyObject_GetAttr(out, s_edges)) == NULL)
        goto done;
    int is_active = attr_true(out, s_active);
    if (is_active < 0)
        goto done;
    if (!PyDict_CheckExact(edges)) {
        PyErr_SetString(PyExc_TypeError, "a forecast output's edges are not a dict");
        goto done;
    }
    if (is_active && (planned = PyObject_GetAttr(forecast, s_planned_total)) == NULL)
        goto done;
    Py_ssize_t position = 0;
    PyObject *where, *edge;
    while (PyDict_Next(edges, &position, &where, &edge)) {
        if (home != Py_None && PyUnicode_Check(where)) { /* a known worker: it crosses or it does not */
            int there = PySequence_Contains(home, where);
            if (there < 0 || PySequence_SetItem(edge, 0, there ? float_zero : float_one) < 0)
                goto done;
        }
        PyObject *probability = PySequence_GetItem(edge, 0);
        PyObject *bytes = probability ? PyNumber_Multiply(probability, nbytes) : NULL;
        PyObject *seconds = bytes ? PyNumber_TrueDivide(bytes, bandwidth) : NULL;
        Py_XDECREF(probability);
        Py_XDECREF(bytes);
        if (seconds == NULL)
            goto done;
        if (is_active) {
            PyObject *old = PySequence_GetItem(edge, 1);
            PyObject *change = old ? PyNumber_Subtract(seconds, old) : NULL;
            PyObject *sum = change ? PyNumber_InPlaceAdd(planned, change) : NULL;
            Py_XDECREF(old);
            Py_XDECREF(change);
            if (sum == NULL) {
                Py_DECREF(seconds);
                goto done;
            }
            Py_SETREF(planned, sum);
        }
        int set = PySequence_SetItem(edge, 1, seconds);
        Py_DECREF(seconds);
        if (set < 0)
            goto done;
    }
    status = is_active ? PyObject_SetAttr(forecast, s_planned_total, planned) : 0;
done:
    Py_XDECREF(bandwidth);
    Py_XDECREF(edges);
    Py_XDECREF(planned);
    return status;
}

/* forecast._produced(out, worker, logical): the output exists, on ``worker``, of ``logical`` bytes. Here
 * unless the output has a forecast from its prefix's history (then its _refine, in Python). 0 or -1. */
static int
produced(PyObject *forecast, PyObject *out, PyObject *worker, PyObject *logical)
{
    if (worker != Py_None) {
        PyObject *one = PyTuple_Pack(1, worker);
        PyObject *home = one ? PyFrozenSet_New(one) : NULL;
        Py_XDECREF(one);
        int set = home ? PyObject_SetAttr(out, s_home, home) : -1;
        Py_XDECREF(home);
        if (set < 0)
            return -1;
    }
    if (logical == Py_None)
        return 0;
    PyObject *nbytes = PyNumber_Float(logical);
    if (nbytes == NULL || PyObject_SetAttr(out, s_nbytes, nbytes) < 0) {
        Py_XDECREF(nbytes);
        return -1;
    }
    int status = -1;
    PyObject *edges = NULL, *planned_forecast = NULL, *home = NULL;
    if ((edges = PyObject_GetAttr(out, s_edges)) == NULL || (planned_forecast = PyObject_GetAttr(out, s_forecast)) == NULL)
        goto done;
    int some_edges = PyObject_IsTrue(edges), some_forecast = PyObject_IsTrue(planned_forecast);
    if (some_edges < 0 || some_forecast < 0)
        goto done;
    if (some_forecast) {
        status = call_void(forecast, s_refine, &out, 1, NULL);
    } else if (some_edges) {
        if ((home = PyObject_GetAttr(out, s_home)) == NULL)
            goto done;
        status = refine(forecast, out, home, nbytes);
    } else {
        status = 0;
    }
done:
    Py_DECREF(nbytes);
    Py_XDECREF(edges);
    Py_XDECREF(planned_forecast);
    Py_XDECREF(home);
    return status;
}

/* forecast._edge(dts, ts, dest, largest, workers, bandwidth): plan one dependency edge of a submitted task;
 * min_bytes is forecast.min_bytes. *bandwidth (a new reference, NULL until read) is the bandwidth the graph's
 * edges share. 0 or -1. */
static int
plan_edge(PyObject *forecast, PyObject *outputs, PyObject *dts, PyObject *ts, PyObject *dest, PyObject *largest,
          long workers, double min_bytes, PyObject **bandwidth)
{
    int status = -1;
    PyObject *dkey = NULL, *out = NULL, *edges = NULL, *probability = NULL, *where = NULL, *nbytes = NULL,
             *seconds = NULL, *edge = NULL;
    if ((dkey = PyObject_GetAttr(dts, s_key)) == NULL)
        goto done;
    out = PyDict_GetItemWithError(outputs, dkey);
    if (out == NULL && PyErr_Occurred())
        goto done;
    Py_XINCREF(out);
    if (out == NULL) { /* _Output(dts.prefix.name, _place(dts)); its size if in memory; active if ready or more */
        PyObject *state = PyObject_GetAttr(dts, s_state);
        if (state == NULL)
            goto done;
        PyObject *prefix = PyObject_GetAttr(dts, s_prefix);
        PyObject *name = prefix ? PyObject_GetAttr(prefix, s_name) : NULL;
        Py_XDECREF(prefix);
        int in_memory = name ? equal(state, s_memory) : -1;
        /* its size: self._memory_size(dts) in memory, else the prefix's learned size (None: never seen) */
        PyObject *size = NULL;
        if (in_memory > 0) {
            if ((size = call_method(forecast, s_memory_size, &dts, 1, NULL)) == NULL)
                in_memory = -1;
        } else if (in_memory == 0) {
            PyObject *table = PyObject_GetAttr(forecast, s_output_bytes);
            PyObject *known = table ? PyDict_GetItemWithError(table, name) : NULL;
            if (table == NULL || (known == NULL && PyErr_Occurred()))
                in_memory = -1;
            size = Py_XNewRef(known);
            Py_XDECREF(table);
        }
        int small = 0; /* a small output plans nothing (forecast.min_bytes): no entry, no work when it runs */
        if (in_memory >= 0 && size != NULL) {
            double bytes = PyFloat_AsDouble(size);
            if (bytes == -1.0 && PyErr_Occurred())
                in_memory = -1;
            else
                small = bytes < min_bytes;
        }
        if (in_memory < 0 || small) {
            Py_DECREF(state);
            Py_XDECREF(name);
            Py_XDECREF(size);
            status = in_memory < 0 ? -1 : 0;
            goto done;
        }
        PyObject *where = place(dts);
        if (where != NULL) {
            PyObject *args[2] = {name, where};
            out = PyObject_Vectorcall(output_type, args, 2, NULL);
        }
        Py_DECREF(name);
        Py_XDECREF(where);
        int stored = out ? PyDict_SetItem(outputs, dkey, out) : -1;
        if (stored == 0 && in_memory > 0 && PyObject_SetAttr(out, s_nbytes, size) < 0)
            stored = -1;
        Py_XDECREF(size);
        int active = stored < 0 ? -1 : equal(state, s_queued);
        if (active == 0)
            active = equal(state, s_no_worker);
        if (active == 0)
            active = equal(state, s_processing);
        if (active == 0)
            active = in_memory;
        Py_DECREF(state);
        if (active < 0 || PyObject_SetAttr(out, s_active, active ? Py_True : Py_False) < 0)
            goto done;
    }
    if ((edges = PyObject_GetAttr(out, s_edges)) == NULL)
        goto done;
    if (dest != Py_None) {
        int known = PySequence_Contains(edges, dest);
        if (known != 0) { /* this output already goes to that worker once */
            status = known < 0 ? -1 : 0;
            goto done;
        }
        PyObject *home = PyObject_GetAttr(out, s_home);
        if (home == NULL)
            goto done;
        if (home != Py_None) {
            int there = PySequence_Contains(home, dest);
            probability = there < 0 ? NULL : Py_NewRef(there ? float_zero : float_one);
        } else {
            probability = PyFloat_FromDouble((double)(workers - 1) / (double)workers);
        }
        Py_DECREF(home);
        if (probability == NULL)
            goto done;
        where = Py_NewRef(dest);
    } else {
        PyObject *key = PyObject_GetAttr(ts, s_key);
        where = key ? PyTuple_Pack(2, s_consumer, key) : NULL;
        Py_XDECREF(key);
        if (where == NULL)
            goto done;
        int known = PySequence_Contains(edges, where);
        if (known != 0) { /* planned when its consumer arrived: a later graph touched it again */
            status = known < 0 ? -1 : 0;
            goto done;
        }
        if (largest == NULL) { /* the consumer's one dependency: as often as this prefix's outputs crossed */
            PyObject *shipped = PyObject_GetAttr(forecast, s_shipped);
            PyObject *prefix = shipped ? PyObject_GetAttr(out, s_prefix) : NULL;
            PyObject *known = prefix ? PyDict_GetItemWithError(shipped, prefix) : NULL;
            if (known != NULL || (prefix != NULL && !PyErr_Occurred()))
                probability = Py_NewRef(known ? known : float_zero);
            Py_XDECREF(shipped);
            Py_XDECREF(prefix);
            if (probability == NULL)
                goto done;
        } else {
            probability = dts == largest ? Py_NewRef(float_zero)
                                         : PyFloat_FromDouble((double)(workers - 1) / (double)workers);
            if (probability == NULL)
                goto done;
        }
    }
    int none = PyObject_RichCompareBool(probability, float_zero, Py_EQ);
    if (none != 0) {
        status = none < 0 ? -1 : 0;
        goto done;
    }
    int replaced = attr_true(out, s_forecast);
    if (replaced < 0)
        goto done;
    if (replaced) { /* a real consumer replaces the prefix's history */
        PyObject *args[2] = {out, float_zero};
        if (call_void(forecast, s_set_forecast, args, 2, NULL) < 0)
            goto done;
    }
    if (*bandwidth == NULL && (*bandwidth = bandwidth_now(forecast)) == NULL)
        goto done;
    if ((nbytes = PyObject_GetAttr(out, s_nbytes)) == NULL)
        goto done;
    if (nbytes == Py_None) { /* not made yet: what crossed of its prefix, else its prefix's size, else 0 */
        PyObject *crossed = PyObject_GetAttr(forecast, s_crossed_bytes);
        PyObject *table = crossed ? PyObject_GetAttr(forecast, s_output_bytes) : NULL;
        PyObject *prefix = table ? PyObject_GetAttr(out, s_prefix) : NULL;
        PyObject *known = prefix ? PyDict_GetItemWithError(crossed, prefix) : NULL;
        if (known == NULL && prefix != NULL && !PyErr_Occurred())
            known = PyDict_GetItemWithError(table, prefix);
        if (known != NULL || (prefix != NULL && !PyErr_Occurred()))
            Py_SETREF(nbytes, Py_NewRef(known ? known : float_zero));
        else
            Py_CLEAR(nbytes);
        Py_XDECREF(crossed);
        Py_XDECREF(table);
        Py_XDECREF(prefix);
        if (nbytes == NULL)
            goto done;
    }
    PyObject *bytes = PyNumber_Multiply(probability, nbytes);
    seconds = bytes ? PyNumber_TrueDivide(bytes, *bandwidth) : NULL;
    Py_XDECREF(bytes);
    if (seconds == NULL || (edge = PyList_New(2)) == NULL)
        goto done;
    PyList_SET_ITEM(edge, 0, Py_NewRef(probability));
    PyList_SET_ITEM(edge, 1, Py_NewRef(seconds));
    if (PyObject_SetItem(edges, where, edge) < 0)
        goto done;
    int is_active = attr_true(out, s_active);
    if (is_active < 0)
        goto done;
    if (is_active) {
        PyObject *planned = PyObject_GetAttr(forecast, s_planned_total);
        PyObject *sum = planned ? PyNumber_InPlaceAdd(planned, seconds) : NULL;
        Py_XDECREF(planned);
        int set = sum ? PyObject_SetAttr(forecast, s_planned_total, sum) : -1;
        Py_XDECREF(sum);
        PyObject *items = set == 0 ? PyObject_GetAttr(forecast, s_items) : NULL;
        PyObject *more = items ? PyNumber_InPlaceAdd(items, long_one) : NULL;
        Py_XDECREF(items);
        set = more ? PyObject_SetAttr(forecast, s_items, more) : -1;
        Py_XDECREF(more);
        if (set < 0)
            goto done;
    }
    status = 0;
done:
    Py_XDECREF(dkey);
    Py_XDECREF(out);
    Py_XDECREF(edges);
    Py_XDECREF(probability);
    Py_XDECREF(where);
    Py_XDECREF(nbytes);
    Py_XDECREF(seconds);
    Py_XDECREF(edge);
    return status;
}

/* The size of a dependency as submitted() weighs it to find a consumer's largest one (a new reference). */
static PyObject *
known_size(PyObject *forecast, PyObject *outputs, PyObject *output_bytes, PyObject *dts)
{
    PyObject *dkey = PyObject_GetAttr(dts, s_key);
    if (dkey == NULL)
        return NULL;
    PyObject *out = PyDict_GetItemWithError(outputs, dkey);
    Py_DECREF(dkey);
    if (out == NULL && PyErr_Occurred())
        return NULL;
    if (out != NULL) {
        PyObject *nbytes = PyObject_GetAttr(out, s_nbytes);
        if (nbytes == NULL || nbytes != Py_None)
            return nbytes;
        Py_DECREF(nbytes);
    }
    PyObject *state = PyObject_GetAttr(dts, s_state);
    int in_memory = state ? equal(state, s_memory) : -1;
    Py_XDECREF(state);
    if (in_memory < 0)
        return NULL;
    if (in_memory)
        return call_method(forecast, s_memory_size, &dts, 1, NULL);
    PyObject *prefix = PyObject_GetAttr(dts, s_prefix);
    PyObject *name = prefix ? PyObject_GetAttr(prefix, s_name) : NULL;
    Py_XDECREF(prefix);
    if (name == NULL)
        return NULL;
    PyObject *known = PyDict_GetItemWithError(output_bytes, name);
    Py_DECREF(name);
    if (known == NULL && PyErr_Occurred())
        return NULL;
    return Py_NewRef(known ? known : float_zero);
}

/* forecast.submitted(tasks): TransferForecast.submitted (and its _edge) here. 0 or -1. */
static int
forecast_submitted(PyObject *forecast, PyObject *tasks)
{
    PyObject *outputs = NULL, *output_bytes = NULL, *bandwidth = NULL, *iterator = NULL, *ts = NULL,
             *dependencies = NULL, *dest = NULL, *largest = NULL, *best = NULL, *inner = NULL, *dts = NULL;
    int status = -1;
    if (!Py_IS_TYPE(forecast, forecast_type) || (outputs = PyObject_GetAttr(forecast, s_outputs)) == NULL ||
        !PyDict_CheckExact(outputs)) {
        if (!PyErr_Occurred())
            status = call_void(forecast, s_submitted, &tasks, 1, NULL);
        goto done;
    }
    PyObject *count = call_method(forecast, s_workers_call, NULL, 0, NULL); /* max(int(self._workers()), 1) */
    PyObject *as_int = count ? PyNumber_Long(count) : NULL;
    Py_XDECREF(count);
    long workers = as_int ? PyLong_AsLong(as_int) : -1;
    Py_XDECREF(as_int);
    if (workers == -1 && PyErr_Occurred())
        goto done;
    if (workers < 1)
        workers = 1;
    PyObject *threshold = PyObject_GetAttr(forecast, s_min_bytes);
    double min_bytes = threshold ? PyFloat_AsDouble(threshold) : -1.0;
    Py_XDECREF(threshold);
    if (min_bytes == -1.0 && PyErr_Occurred())
        goto done;
    if ((output_bytes = PyObject_GetAttr(forecast, s_output_bytes)) == NULL || !PyDict_Check(output_bytes)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "the forecast's output_bytes is not a dict");
        goto done;
    }
    if ((iterator = PyObject_GetIter(tasks)) == NULL)
        goto done;
    while ((ts = PyIter_Next(iterator)) != NULL) {
        if ((dependencies = PyObject_GetAttr(ts, s_dependencies)) == NULL)
            goto done;
        int some = PyObject_IsTrue(dependencies);
        if (some < 0)
            goto done;
        if (some) {
            int restricted = attr_true(ts, s_worker_restrictions);
            if (restricted < 0)
                goto done;
            dest = restricted ? PyObject_CallOneArg(pinned_of, ts) : Py_NewRef(Py_None);
            if (dest == NULL)
                goto done;
            Py_ssize_t fan_in = PyObject_Length(dependencies);
            if (fan_in < 0)
                goto done;
            if (dest == Py_None && fan_in > 1) { /* the first largest dependency, as max() picks it */
                best = Py_NewRef(float_zero);
                if ((inner = PyObject_GetIter(dependencies)) == NULL)
                    goto done;
                while ((dts = PyIter_Next(inner)) != NULL) {
                    PyObject *size = known_size(forecast, outputs, output_bytes, dts);
                    if (size == NULL)
                        goto done;
                    int larger = largest == NULL ? 1 : PyObject_RichCompareBool(size, best, Py_GT);
                    if (larger < 0) {
                        Py_DECREF(size);
                        goto done;
                    }
                    if (larger) {
                        Py_XSETREF(largest, Py_NewRef(dts));
                        Py_SETREF(best, size);
                    } else {
                        Py_DECREF(size);
                    }
                    Py_CLEAR(dts);
                }
                Py_CLEAR(inner);
                if (PyErr_Occurred())
                    goto done;
            }
            if ((inner = PyObject_GetIter(dependencies)) == NULL)
                goto done;
            while ((dts = PyIter_Next(inner)) != NULL) {
                if (plan_edge(forecast, outputs, dts, ts, dest, largest, workers, min_bytes, &bandwidth) < 0)
                    goto done;
                Py_CLEAR(dts);
            }
            Py_CLEAR(inner);
            if (PyErr_Occurred())
                goto done;
        }
        Py_CLEAR(dest);
        Py_CLEAR(largest);
        Py_CLEAR(best);
        Py_CLEAR(dependencies);
        Py_CLEAR(ts);
    }
    if (!PyErr_Occurred())
        status = 0;
done:
    Py_XDECREF(outputs);
    Py_XDECREF(output_bytes);
    Py_XDECREF(bandwidth);
    Py_XDECREF(iterator);
    Py_XDECREF(ts);
    Py_XDECREF(dependencies);
    Py_XDECREF(dest);
    Py_XDECREF(largest);
    Py_XDECREF(best);
    Py_XDECREF(inner);
    Py_XDECREF(dts);
    return status;
}

/* ------------------------------------------------------------ the twins */

static int became_ready(TaskPath *self, PyObject *ts);

/* _prior(prefix): the learned duration of a prefix (a new reference). */
static PyObject *
prior_of(TaskPath *self, PyObject *prefix)
{
    PyObject *name = PyObject_GetAttr(prefix, s_name);
    if (name == NULL)
        return NULL;
    PyObject *known = PyDict_GetItemWithError(self->priors, name);
    Py_DECREF(name);
    if (known != NULL) {
        Py_INCREF(known);
        return known;
    }
    if (PyErr_Occurred()) /* an unhashable name: Python's lookup raises the same */
        return NULL;
    return call_plugin(self, s_prior, &prefix, 1); /* not read since the latest graph: Python reads and counts it */
}

/* _type_of(ts, ready) for a task without annotations; the annotated ones go to Python. A new reference. */
static PyObject *
type_of(TaskPath *self, PyObject *ts, PyObject *ready)
{
    int annotated = attr_true(ts, s_annotations);
    if (annotated < 0)
        return NULL;
    if (annotated) {
        PyObject *args[2] = {ts, ready};
        return call_plugin(self, s_type_of, args, 2);
    }
    PyObject *run_spec = PyObject_GetAttr(ts, s_run_spec);
    if (run_spec == NULL)
        return NULL;
    PyObject *found = PyObject_CallOneArg(self->walk, run_spec); /* resolve_type(None, run_spec, default) */
    Py_DECREF(run_spec);
    if (found == NULL)
        return NULL;
    if (found == Py_None) {
        Py_DECREF(found);
        found = pget(self, s_default_type);
        if (found == NULL)
            return NULL;
    }
    PyObject *prefix = PyObject_GetAttr(ts, s_prefix);
    PyObject *prefix_name = prefix ? PyObject_GetAttr(prefix, s_name) : NULL;
    Py_XDECREF(prefix);
    if (prefix_name == NULL) {
        Py_DECREF(found);
        return NULL;
    }
    PyObject *args[4] = {found, prefix_name, Py_None, ready};
    PyObject *entry = PyObject_Vectorcall(self->entry_type, args, 4, NULL);
    Py_DECREF(found);
    Py_DECREF(prefix_name);
    return entry;
}

/* runnable.add / runnable.remove of an entry's type, if the plugin counts runnable tasks: 0 or -1. */
static int
count_runnable(TaskPath *self, PyObject *method, PyObject *task_type)
{
    int counting = ptrue(self, s_count_runnable);
    if (counting <= 0)
        return counting;
    return call_void(self->runnable, method, &task_type, 1, NULL);
}

/* _enter(key) (ready), or _enter(key, ready=False) from the next wave: 0 or -1. */
static int
enter(TaskPath *self, PyObject *key, PyObject *ready)
{
    PyObject *patch = patched(self, s_enter);
    if (patch != NULL || PyErr_Occurred()) {
        if (patch == NULL)
            return -1;
        PyObject *args[2] = {key, ready}; /* called as the Python path calls it */
        PyObject *result = ready == Py_True ? PyObject_Vectorcall(patch, args, 1, NULL)
                                            : PyObject_Vectorcall(patch, args, 1, kw_ready);
        Py_XDECREF(result);
        return result ? 0 : -1;
    }
    int status = -1;
    PyObject *ts = NULL, *entry = NULL, *task_type = NULL, *prefix = NULL, *reuse = NULL, *events = NULL,
             *ts_prefix = NULL, *prior = NULL;
    ts = PyObject_GetItem(self->tasks, key);
    if (ts == NULL)
        goto done;
    entry = type_of(self, ts, ready);
    if (entry == NULL || PyObject_SetItem(self->scheduled, key, entry) < 0)
        goto done;
    if ((events = pget(self, s_events)) == NULL || (task_type = PyObject_GetAttr(entry, s_task_type)) == NULL ||
        (prefix = PyObject_GetAttr(entry, s_prefix)) == NULL || (ts_prefix = PyObject_GetAttr(ts, s_prefix)) == NULL ||
        (prior = prior_of(self, ts_prefix)) == NULL)
        goto done;
    if (events_add(events, task_type, prefix, prior) < 0)
        goto done;
    if ((reuse = PyObject_GetAttr(entry, s_reuse)) == NULL)
        goto done;
    if (reuse != Py_None && call_void(self->reuse, s_add, &reuse, 1, NULL) < 0) /* add(None) does nothing */
        goto done;
    int planning = ptrue(self, s_expected_transfers);
    if (planning < 0 || (planning && forecast_activate(self->forecast, ts) < 0))
        goto done;
    int is_ready = PyObject_IsTrue(ready);
    if (is_ready < 0)
        goto done;
    if (is_ready && (count_runnable(self, s_add, task_type) < 0 || became_ready(self, ts) < 0))
        goto done;
    status = 0;
done:
    Py_XDECREF(ts);
    Py_XDECREF(entry);
    Py_XDECREF(events);
    Py_XDECREF(task_type);
    Py_XDECREF(prefix);
    Py_XDECREF(ts_prefix);
    Py_XDECREF(prior);
    Py_XDECREF(reuse);
    return status;
}

/* _joins_wave(ts): 1 where waiting ``ts`` joins the wave (every dependency in memory or ready, or its one
 * dependency in the wave and neither a P2P barrier), 0 where not, -1 on an error. */
static int
joins_wave(TaskPath *self, PyObject *ts)
{
    int status = -1;
    PyObject *key = NULL, *run_spec = NULL, *state = NULL, *dependencies = NULL, *iterator = NULL, *dts = NULL;
    if ((key = PyObject_GetAttr(ts, s_key)) == NULL)
        goto done;
    int known = PySequence_Contains(self->scheduled, key);
    if (known != 0) {
        status = known < 0 ? -1 : 0;
        goto done;
    }
    if ((run_spec = PyObject_GetAttr(ts, s_run_spec)) == NULL)
        goto done;
    if (run_spec == Py_None) {
        status = 0;
        goto done;
    }
    if ((state = PyObject_GetAttr(ts, s_state)) == NULL)
        goto done;
    int waiting = equal(state, s_waiting);
    if (waiting == 0)
        waiting = equal(state, s_released_state);
    if (waiting <= 0) {
        status = waiting;
        goto done;
    }
    if ((dependencies = PyObject_GetAttr(ts, s_dependencies)) == NULL)
        goto done;
    Py_ssize_t fan_in = PyObject_Length(dependencies);
    if (fan_in < 0)
        goto done;
    if (fan_in > WAVE_FAN_IN) { /* O(fan-in) per dependency edge would be quadratic: counted when ready */
        status = 0;
        goto done;
    }
    if ((iterator = PyObject_GetIter(dependencies)) == NULL)
        goto done;
    while ((dts = PyIter_Next(iterator)) != NULL) {
        PyObject *dstate = PyObject_GetAttr(dts, s_state);
        if (dstate == NULL)
            goto done;
        int in_memory = equal(dstate, s_memory);
        Py_DECREF(dstate);
        if (in_memory < 0)
            goto done;
        if (!in_memory) {
            PyObject *dkey = PyObject_GetAttr(dts, s_key);
            if (dkey == NULL)
                goto done;
            PyObject *entry = PyDict_GetItemWithError(self->scheduled, dkey); /* dict.get */
            Py_DECREF(dkey);
            if (entry == NULL) {
                status = PyErr_Occurred() ? -1 : 0;
                goto done;
            }
            int is_ready = attr_true(entry, s_ready);
            if (is_ready < 0)
                goto done;
            if (is_ready == 0) { /* one dependency in the wave is enough, unless either is a P2P barrier */
                int barrier = 1;
                if (fan_in == 1) {
                    PyObject *answer = PyObject_CallOneArg(is_barrier_fn, dts);
                    barrier = answer ? PyObject_IsTrue(answer) : -1;
                    Py_XDECREF(answer);
                    if (barrier == 0) {
                        answer = PyObject_CallOneArg(is_barrier_fn, ts);
                        barrier = answer ? PyObject_IsTrue(answer) : -1;
                        Py_XDECREF(answer);
                    }
                    if (barrier < 0)
                        goto done;
                }
                if (barrier) {
                    status = 0;
                    goto done;
                }
            }
        }
        Py_CLEAR(dts);
    }
    status = PyErr_Occurred() ? -1 : 1;
done:
    Py_XDECREF(key);
    Py_XDECREF(run_spec);
    Py_XDECREF(state);
    Py_XDECREF(dependencies);
    Py_XDECREF(iterator);
    Py_XDECREF(dts);
    return status;
}

/* ``task`` joins the wave where _joins_wave says so: 1 (it joined), 0 (it did not) or -1. */
static int
join_one(TaskPath *self, PyObject *task)
{
    int joins = joins_wave(self, task);
    if (joins <= 0)
        return joins;
    PyObject *key = PyObject_GetAttr(task, s_key);
    int status = key ? enter(self, key, Py_False) : -1;
    Py_XDECREF(key);
    return status < 0 ? -1 : 1;
}

/* _join_wave(ts): 0 or -1. ``ts`` joins the wave where _joins_wave says so, then its single-dependency
 * dependents, one step, the last first (as the Python twin walks them). */
static int
join_wave(TaskPath *self, PyObject *ts)
{
    int twin = run_patch(self, s_join_wave, ts);
    if (twin <= 0)
        return twin;
    int joined = join_one(self, ts);
    if (joined <= 0)
        return joined;
    int status = 0;
    PyObject *dependents = PyObject_GetAttr(ts, s_dependents);
    PyObject *iterator = dependents ? PyObject_GetIter(dependents) : NULL;
    Py_XDECREF(dependents);
    PyObject *single = iterator ? PyList_New(0) : NULL;
    if (single == NULL) {
        Py_XDECREF(iterator);
        return -1;
    }
    PyObject *dts;
    while (status == 0 && (dts = PyIter_Next(iterator)) != NULL) {
        PyObject *its = PyObject_GetAttr(dts, s_dependencies);
        Py_ssize_t fan_in = its ? PyObject_Length(its) : -1;
        Py_XDECREF(its);
        if (fan_in < 0 || (fan_in == 1 && PyList_Append(single, dts) < 0))
            status = -1;
        Py_DECREF(dts);
    }
    Py_DECREF(iterator);
    if (status == 0 && PyErr_Occurred())
        status = -1;
    for (Py_ssize_t i = PyList_GET_SIZE(single) - 1; status == 0 && i >= 0; i--)
        status = join_one(self, PyList_GET_ITEM(single, i)) < 0 ? -1 : 0;
    Py_DECREF(single);
    return status;
}

/* _became_ready(ts): 0 or -1. */
static int
became_ready(TaskPath *self, PyObject *ts)
{
    int twin = run_patch(self, s_became_ready, ts);
    if (twin <= 0)
        return twin;
    int wave = ptrue(self, s_next_wave);
    if (wave <= 0)
        return wave;
    PyObject *dependents = PyObject_GetAttr(ts, s_dependents);
    if (dependents == NULL)
        return -1;
    PyObject *iterator = PyObject_GetIter(dependents);
    Py_DECREF(dependents);
    if (iterator == NULL)
        return -1;
    PyObject *dts;
    while ((dts = PyIter_Next(iterator)) != NULL) {
        int status = join_wave(self, dts);
        Py_DECREF(dts);
        if (status < 0) {
            Py_DECREF(iterator);
            return -1;
        }
    }
    Py_DECREF(iterator);
    return PyErr_Occurred() ? -1 : 0;
}

/* _finish(key, entry, True, kwargs) of a task counted as scheduled: 0 or -1. */
static int
finish_task(TaskPath *self, PyObject *key, PyObject *entry, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *patch = patched(self, s_finish);
    if (patch != NULL || PyErr_Occurred()) {
        if (patch == NULL)
            return -1;
        PyObject *kwargs = keywords_dict(args, nargs, kwnames);
        if (kwargs == NULL)
            return -1;
        PyObject *call[4] = {key, entry, Py_True, kwargs};
        PyObject *result = PyObject_Vectorcall(patch, call, 4, NULL);
        Py_DECREF(kwargs);
        Py_XDECREF(result);
        return result ? 0 : -1;
    }
    int status = -1;
    PyObject *ts = NULL, *task_type = NULL, *prefix = NULL, *declared = NULL, *compute = NULL, *transfers = NULL,
             *iterator = NULL, *startstop = NULL, *sizes = NULL, *events = NULL, *logical = NULL;
    ts = PyDict_GetItemWithError(self->tasks, key); /* scheduler.tasks.get(key) */
    if (ts == NULL && PyErr_Occurred())
        return -1;
    if (ts == Py_None) /* a dict value of None: Python's "is not None" checks treat it as missing too */
        ts = NULL;
    Py_XINCREF(ts);
    if ((task_type = PyObject_GetAttr(entry, s_task_type)) == NULL || (prefix = PyObject_GetAttr(entry, s_prefix)) == NULL ||
        (declared = PyObject_GetAttr(entry, s_reuse)) == NULL)
        goto done;
    /* reuse.remove(declared, finished=True): nothing to do for an undeclared task while no declared one is
     * remembered (DeclaredReuse.finished's common path) */
    int remembered = 1;
    if (declared == Py_None) {
        remembered = attr_true(self->reuse, s_recent_count);
        if (remembered < 0)
            goto done;
    }
    if (remembered) {
        PyObject *call[2] = {declared, Py_True};
        if (call_void(self->reuse, s_remove, call, 1, kw_finished) < 0)
            goto done;
    }
    compute = float_zero;
    Py_INCREF(compute);
    PyObject *startstops = keyword(args, nargs, kwnames, s_startstops); /* kwargs.get("startstops") or () */
    if (startstops != NULL) {
        int some = PyObject_IsTrue(startstops);
        if (some < 0 || (some && (iterator = PyObject_GetIter(startstops)) == NULL))
            goto done;
    }
    while (iterator != NULL && (startstop = PyIter_Next(iterator)) != NULL) {
        PyObject *action = PyObject_CallMethodOneArg(startstop, s_get, s_action);
        if (action == NULL)
            goto done;
        int is_compute = equal(action, s_compute);
        int is_transfer = is_compute == 0 ? equal(action, s_transfer) : 0;
        Py_DECREF(action);
        if (is_compute < 0 || is_transfer < 0)
            goto done;
        if (is_compute) {
            PyObject *stop = PyObject_GetItem(startstop, s_stop);
            PyObject *start = stop ? PyObject_GetItem(startstop, s_start) : NULL;
            PyObject *seconds = start ? PyNumber_Subtract(stop, start) : NULL;
            Py_XDECREF(stop);
            Py_XDECREF(start);
            if (seconds == NULL)
                goto done;
            PyObject *sum = PyNumber_InPlaceAdd(compute, seconds);
            Py_DECREF(seconds);
            if (sum == NULL)
                goto done;
            Py_SETREF(compute, sum);
        } else if (is_transfer) {
            if (transfers == NULL && (transfers = PyList_New(0)) == NULL)
                goto done;
            if (PyList_Append(transfers, startstop) < 0)
                goto done;
        }
        Py_CLEAR(startstop);
    }
    if (PyErr_Occurred())
        goto done;
    /* sizes = (kwargs.get("metadata") or {}).get(METADATA_KEY): [logical, wire] if the output reports them */
    PyObject *metadata = keyword(args, nargs, kwnames, s_metadata);
    if (metadata != NULL) {
        int has = PyObject_IsTrue(metadata);
        if (has < 0)
            goto done;
        if (has && (sizes = PyObject_CallMethodOneArg(metadata, s_get, s_metadata_key)) == NULL)
            goto done;
    }
    int sized = 0;
    if (sizes != NULL && (sized = PyObject_IsTrue(sizes)) < 0)
        goto done;
    int communication = equal(task_type, s_communication);
    if (communication < 0)
        goto done;
    if (communication) {
        int correcting = ptrue(self, s_transfer_correction);
        if (correcting < 0)
            goto done;
        if (correcting && sized) {
            PyObject *link = PyObject_GetAttr(self->plugin, s_link);
            PyObject *bandwidth = link ? PyObject_CallNoArgs(link) : NULL;
            Py_XDECREF(link);
            PyObject *first = bandwidth ? PySequence_GetItem(sizes, 0) : NULL;
            PyObject *second = first ? PySequence_GetItem(sizes, 1) : NULL;
            PyObject *corrected = NULL;
            if (second != NULL) {
                PyObject *call[4] = {compute, first, second, bandwidth};
                corrected = PyObject_Vectorcall(uncompressed_seconds, call, 4, NULL);
            }
            Py_XDECREF(bandwidth);
            Py_XDECREF(first);
            Py_XDECREF(second);
            if (corrected == NULL)
                goto done;
            Py_SETREF(compute, corrected);
        }
    }
    if ((events = pget(self, s_events)) == NULL)
        goto done;
    if (events_finish(events, task_type, prefix, compute) < 0)
        goto done;
    if (ts != NULL) {
        /* p2p.pending: P2PTraffic's ``bool(self._planned)`` read here, another meter's property by lookup */
        int is_pending = attr_true(self->p2p, Py_IS_TYPE(self->p2p, p2p_type) ? s_planned : s_pending);
        if (is_pending < 0 || (is_pending && call_void(self->p2p, s_input_finished, &ts, 1, NULL) < 0))
            goto done;
        /* logical = sizes[0] if sizes else (nbytes if nbytes is not None and nbytes >= 0 else None) */
        if (sized) {
            if ((logical = PySequence_GetItem(sizes, 0)) == NULL)
                goto done;
        } else {
            PyObject *nbytes = keyword(args, nargs, kwnames, s_nbytes);
            int usable = 0;
            if (nbytes != NULL && nbytes != Py_None &&
                (usable = PyObject_RichCompareBool(nbytes, long_zero, Py_GE)) < 0)
                goto done;
            logical = usable ? nbytes : Py_None;
            Py_INCREF(logical);
        }
        PyObject *worker = keyword(args, nargs, kwnames, s_worker);
        if (forecast_finished(self->forecast, ts, worker ? worker : Py_None, logical) < 0)
            goto done;
        if (transfers != NULL && PyList_GET_SIZE(transfers) > 0) {
            PyObject *charge[3] = {ts, prefix, transfers};
            if (plugin_void(self, s_charge_transfers, charge, 3) < 0)
                goto done;
        }
    }
    status = 0;
done:
    Py_XDECREF(ts);
    Py_XDECREF(task_type);
    Py_XDECREF(prefix);
    Py_XDECREF(declared);
    Py_XDECREF(compute);
    Py_XDECREF(transfers);
    Py_XDECREF(iterator);
    Py_XDECREF(startstop);
    Py_XDECREF(sizes);
    Py_XDECREF(events);
    Py_XDECREF(logical);
    return status;
}

/* _maybe_evaluate(now): 0 or -1. */
static int
maybe_evaluate(TaskPath *self, PyObject *now)
{
    int twin = run_patch(self, s_maybe_evaluate, now);
    if (twin <= 0)
        return twin;
    PyObject *next = pget(self, s_next_evaluation);
    if (next == NULL)
        return -1;
    int due = PyObject_RichCompareBool(now, next, Py_GE);
    Py_DECREF(next);
    if (due <= 0)
        return due;
    PyObject *interval = pget(self, s_evaluate_interval);
    PyObject *following = interval ? PyNumber_Add(now, interval) : NULL;
    Py_XDECREF(interval);
    if (following == NULL)
        return -1;
    int status = PyObject_SetAttr(self->plugin, s_next_evaluation, following);
    Py_DECREF(following);
    if (status < 0)
        return -1;
    return call_void(self->runtime, s_evaluate, NULL, 0, NULL);
}

/* The transition's body (the Python hook's ``try``): 0 (evaluate), 1 (returned early), -1 (raised). */
static int
route(TaskPath *self, PyObject *key, PyObject *start, PyObject *finish, PyObject *const *args, Py_ssize_t nargs,
      PyObject *kwnames)
{
    int status = -1;
    PyObject *entry = PyDict_GetItemWithError(self->scheduled, key);
    if (entry == NULL && PyErr_Occurred())
        return -1;
    Py_XINCREF(entry); /* the dict may drop it below */
    int active = equal(finish, s_processing);
    if (active == 0)
        active = equal(finish, s_queued);
    if (active == 0)
        active = equal(finish, s_no_worker);
    if (active < 0)
        goto done;
    int from_processing = -1, to_memory = -1;
    if (active) {
        if (entry == NULL) {
            if (enter(self, key, Py_True) < 0)
                goto done;
        } else {
            int is_ready = attr_true(entry, s_ready);
            if (is_ready < 0)
                goto done;
            if (!is_ready) { /* the next wave became ready: counted already */
                if (PyObject_SetAttr(entry, s_ready, Py_True) < 0)
                    goto done;
                PyObject *task_type = PyObject_GetAttr(entry, s_task_type);
                if (task_type == NULL)
                    goto done;
                int counted = count_runnable(self, s_add, task_type);
                Py_DECREF(task_type);
                if (counted < 0)
                    goto done;
                PyObject *ts = PyObject_GetItem(self->tasks, key);
                if (ts == NULL)
                    goto done;
                int became = became_ready(self, ts);
                Py_DECREF(ts);
                if (became < 0)
                    goto done;
            }
        }
    } else if (entry != NULL) {
        int waiting = equal(finish, s_waiting);
        if (waiting != 0) {
            status = waiting < 0 ? -1 : 1; /* counted at submission: it was ready then */
            goto done;
        }
        if (PyDict_DelItem(self->scheduled, key) < 0)
            goto done;
        int was_ready = attr_true(entry, s_ready);
        if (was_ready < 0)
            goto done;
        if (was_ready) {
            PyObject *task_type = PyObject_GetAttr(entry, s_task_type);
            if (task_type == NULL)
                goto done;
            int counted = count_runnable(self, s_remove, task_type);
            Py_DECREF(task_type);
            if (counted < 0)
                goto done;
        }
        if ((from_processing = equal(start, s_processing)) < 0)
            goto done;
        if (from_processing && (to_memory = equal(finish, s_memory)) < 0)
            goto done;
        if (from_processing && to_memory) {
            if (finish_task(self, key, entry, args, nargs, kwnames) < 0)
                goto done;
        } else { /* released, erred, forgotten: it left without a measurement */
            PyObject *call[2] = {key, entry};
            if (plugin_void(self, s_discard, call, 2) < 0)
                goto done;
        }
        if (PyDict_GET_SIZE(self->scheduled) == 0 && plugin_void(self, s_settle, NULL, 0) < 0)
            goto done;
    } else {
        if ((from_processing = equal(start, s_processing)) < 0)
            goto done;
        if (from_processing && (to_memory = equal(finish, s_memory)) < 0)
            goto done;
        if (from_processing && to_memory) { /* running before asafe was installed */
            PyObject *kwargs = keywords_dict(args, nargs, kwnames);
            if (kwargs == NULL)
                goto done;
            PyObject *call[4] = {key, Py_None, Py_False, kwargs};
            int called = plugin_void(self, s_finish, call, 4);
            Py_DECREF(kwargs);
            if (called < 0)
                goto done;
        } else {
            int from_memory = equal(start, s_memory);
            if (from_memory < 0)
                goto done;
            if (!from_memory) {
                status = 1;
                goto done;
            }
            if (forecast_released(self->forecast, key) < 0) /* its planned transfers will not happen */
                goto done;
        }
    }
    {
        PyObject *now = PyObject_CallNoArgs(self->clock); /* one clock read for both checks */
        if (now == NULL)
            goto done;
        int meter = p2p_active_at(self->p2p, now);
        if (meter > 0) {
            PyObject *call[2] = {key, finish};
            meter = plugin_void(self, s_p2p_event, call, 2);
        }
        int evaluated = meter < 0 ? -1 : maybe_evaluate(self, now);
        Py_DECREF(now);
        if (evaluated < 0)
            goto done;
    }
    status = 0;
done:
    Py_XDECREF(entry);
    return status;
}

/* The Python hook's ``except Exception``: log and count through _hook_failed, then settle if nothing is
 * scheduled, with the exception as the one being handled (sys.exc_info). NULL: a BaseException, or a failure
 * while handling, propagates to the scheduler (which logs it). */
static PyObject *
failed(TaskPath *self)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return NULL;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL)
        PyException_SetTraceback(value, traceback);
    PyObject *outer_type, *outer_value, *outer_traceback;
    PyErr_GetExcInfo(&outer_type, &outer_value, &outer_traceback);
    PyErr_SetExcInfo(type, value, traceback); /* steals the three */
    int status = plugin_void(self, s_hook_failed, &s_hook_name, 1);
    if (status == 0 && PyDict_GET_SIZE(self->scheduled) == 0)
        status = plugin_void(self, s_settle, NULL, 0);
    PyErr_SetExcInfo(outer_type, outer_value, outer_traceback);
    if (status < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
taskpath_transition(TaskPath *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 3) {
        PyErr_Format(PyExc_TypeError, "transition() takes key, start and finish (%zd positional arguments given)", nargs);
        return NULL;
    }
    PyObject *key = args[0], *start = args[1], *finish = args[2];
    int same = equal(start, finish);
    if (same != 0)
        return same < 0 ? NULL : Py_NewRef(Py_None); /* e.g. processing -> processing when the worker is gone */
    int attached = ptrue(self, s_attached);
    if (attached <= 0)
        return attached < 0 ? NULL : Py_NewRef(Py_None);
    if (route(self, key, start, finish, args, nargs, kwnames) < 0)
        return failed(self);
    Py_RETURN_NONE;
}

/* _enter(key) and _join_wave(ts) for update_graph: the same twins, called from the plugin's Python hook. */
static PyObject *
taskpath_enter(TaskPath *self, PyObject *key)
{
    if (enter(self, key, Py_True) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
taskpath_join_wave(TaskPath *self, PyObject *ts)
{
    if (join_wave(self, ts) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
taskpath_submitted(TaskPath *self, PyObject *tasks)
{
    if (forecast_submitted(self->forecast, tasks) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* all(dts.state == "memory" for dts in ts.dependencies): 1, 0, or -1. */
static int
dependencies_in_memory(PyObject *ts)
{
    PyObject *dependencies = PyObject_GetAttr(ts, s_dependencies);
    PyObject *iterator = dependencies ? PyObject_GetIter(dependencies) : NULL;
    Py_XDECREF(dependencies);
    if (iterator == NULL)
        return -1;
    int all = 1;
    PyObject *dts;
    while (all == 1 && (dts = PyIter_Next(iterator)) != NULL) {
        PyObject *state = PyObject_GetAttr(dts, s_state);
        Py_DECREF(dts);
        all = state ? equal(state, s_memory) : -1;
        Py_XDECREF(state);
    }
    Py_DECREF(iterator);
    return all < 0 || PyErr_Occurred() ? -1 : all;
}

/* _arrive(tasks): the graph's new tasks counted and planned, as the plugin's _arrive (a patch on the
 * instance is called instead). How many new tasks it had (0: none). */
static PyObject *
taskpath_arrive(TaskPath *self, PyObject *tasks)
{
    PyObject *patch = patched(self, s_arrive);
    if (patch != NULL)
        return PyObject_CallOneArg(patch, tasks);
    if (PyErr_Occurred())
        return NULL;
    PyObject *result = NULL, *new = PyList_New(0), *waiting = NULL, *iterator = NULL, *key = NULL;
    if (new == NULL || (iterator = PyObject_GetIter(tasks)) == NULL)
        goto done;
    while ((key = PyIter_Next(iterator)) != NULL) {
        /* ts = known.get(key); ts is not None and ts.run_spec is not None and ts.state in ("released",
         * "waiting") and key not in self._scheduled */
        PyObject *ts = PyDict_GetItemWithError(self->tasks, key);
        int take = ts != NULL && ts != Py_None;
        if (ts == NULL && PyErr_Occurred())
            goto done;
        if (take) {
            PyObject *run_spec = PyObject_GetAttr(ts, s_run_spec);
            if (run_spec == NULL)
                goto done;
            take = run_spec != Py_None;
            Py_DECREF(run_spec);
        }
        if (take) {
            PyObject *state = PyObject_GetAttr(ts, s_state);
            if (state == NULL)
                goto done;
            take = equal(state, s_released_state);
            if (take == 0)
                take = equal(state, s_waiting);
            Py_DECREF(state);
            if (take < 0)
                goto done;
        }
        if (take) {
            int counted = PyDict_Contains(self->scheduled, key);
            if (counted < 0 || (!counted && PyList_Append(new, ts) < 0))
                goto done;
        }
        Py_CLEAR(key);
    }
    if (PyErr_Occurred())
        goto done;
    if (PyList_GET_SIZE(new) == 0) {
        result = PyLong_FromLong(0);
        goto done;
    }
    PyDict_Clear(self->priors); /* what the scheduler learned since the last graph */
    int expected = ptrue(self, s_expected_transfers);
    if (expected < 0 || (expected && (forecast_submitted(self->forecast, new) < 0 ||
                                      call_void(self->p2p, s_submitted, &new, 1, NULL) < 0)))
        goto done;
    if ((waiting = PyList_New(0)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(new); i++) {
        PyObject *ts = PyList_GET_ITEM(new, i);
        int ready = dependencies_in_memory(ts);
        if (ready < 0)
            goto done;
        if (ready) {
            PyObject *ts_key = PyObject_GetAttr(ts, s_key);
            int entered = ts_key ? enter(self, ts_key, Py_True) : -1;
            Py_XDECREF(ts_key);
            if (entered < 0)
                goto done;
        } else if (PyList_Append(waiting, ts) < 0) {
            goto done;
        }
    }
    int wave = ptrue(self, s_next_wave);
    if (wave < 0)
        goto done;
    for (Py_ssize_t i = 0; wave && i < PyList_GET_SIZE(waiting); i++) {
        if (join_wave(self, PyList_GET_ITEM(waiting, i)) < 0) /* the dependents of earlier graphs' tasks */
            goto done;
    }
    result = PyLong_FromSsize_t(PyList_GET_SIZE(new));
done:
    Py_XDECREF(key);
    Py_XDECREF(iterator);
    Py_XDECREF(new);
    Py_XDECREF(waiting);
    return result;
}

/* ------------------------------------------------------------- the type */

static int
taskpath_traverse(TaskPath *self, visitproc visit, void *arg)
{
    Py_VISIT(self->plugin);
    Py_VISIT(self->pdict);
    Py_VISIT(self->scheduled);
    Py_VISIT(self->tasks);
    Py_VISIT(self->priors);
    Py_VISIT(self->forecast);
    Py_VISIT(self->p2p);
    Py_VISIT(self->reuse);
    Py_VISIT(self->runnable);
    Py_VISIT(self->runtime);
    Py_VISIT(self->entry_type);
    Py_VISIT(self->walk);
    Py_VISIT(self->clock);
    return 0;
}

static int
taskpath_clear(TaskPath *self)
{
    Py_CLEAR(self->plugin);
    Py_CLEAR(self->pdict);
    Py_CLEAR(self->scheduled);
    Py_CLEAR(self->tasks);
    Py_CLEAR(self->priors);
    Py_CLEAR(self->forecast);
    Py_CLEAR(self->p2p);
    Py_CLEAR(self->reuse);
    Py_CLEAR(self->runnable);
    Py_CLEAR(self->runtime);
    Py_CLEAR(self->entry_type);
    Py_CLEAR(self->walk);
    Py_CLEAR(self->clock);
    return 0;
}

static void
taskpath_dealloc(TaskPath *self)
{
    PyObject_GC_UnTrack(self);
    taskpath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A part of the plugin, as it is now (a new reference). */
static PyObject *
part(PyObject *plugin, const char *name)
{
    return PyObject_GetAttrString(plugin, name);
}

static PyObject *
taskpath_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"plugin", "entry_type", "walk", NULL};
    PyObject *plugin, *entry_type, *walk;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:TaskPath", names, &plugin, &entry_type, &walk))
        return NULL;
    TaskPath *self = (TaskPath *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->plugin = Py_NewRef(plugin);
    self->entry_type = Py_NewRef(entry_type);
    self->walk = Py_NewRef(walk);
    PyObject *scheduler = NULL;
    if ((self->pdict = PyObject_GenericGetDict(plugin, NULL)) == NULL || !PyDict_Check(self->pdict) ||
        (self->scheduled = part(plugin, "_scheduled")) == NULL || (self->priors = part(plugin, "_priors")) == NULL ||
        (self->forecast = part(plugin, "forecast")) == NULL || (self->p2p = part(plugin, "p2p")) == NULL ||
        (self->reuse = part(plugin, "reuse")) == NULL || (self->runnable = part(plugin, "runnable")) == NULL ||
        (self->runtime = part(plugin, "runtime")) == NULL || (scheduler = part(plugin, "scheduler")) == NULL ||
        (self->tasks = part(scheduler, "tasks")) == NULL)
        goto error;
    Py_DECREF(scheduler);
    scheduler = NULL;
    if (!PyDict_CheckExact(self->scheduled) || !PyDict_CheckExact(self->priors) || !PyDict_Check(self->tasks)) {
        PyErr_SetString(PyExc_TypeError, "TaskPath needs the plugin's _scheduled and _priors dicts and a scheduler "
                                         "whose tasks are a dict");
        goto error;
    }
    PyObject *time_module = PyImport_ImportModule("time");
    if (time_module == NULL)
        goto error;
    self->clock = PyObject_GetAttrString(time_module, "monotonic");
    Py_DECREF(time_module);
    if (self->clock == NULL)
        goto error;
    return (PyObject *)self; /* tp_alloc tracked it */
error:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "TaskPath needs a plugin with an instance __dict__");
    Py_XDECREF(scheduler);
    Py_DECREF(self);
    return NULL;
}

static PyMethodDef taskpath_methods[] = {
    {"transition", (PyCFunction)(void (*)(void))taskpath_transition, METH_FASTCALL | METH_KEYWORDS,
     "transition(key, start, finish, *args, **kwargs)\n--\n\n"
     "As AdaptiveSchedulerPlugin.transition, on the plugin this path was made for."},
    {"submitted", (PyCFunction)taskpath_submitted, METH_O,
     "submitted(tasks)\n--\n\nAs the plugin's forecast.submitted(tasks): plan the transfers of a graph's new tasks."},
    {"enter", (PyCFunction)taskpath_enter, METH_O,
     "enter(key)\n--\n\nAs AdaptiveSchedulerPlugin._enter(key): count a ready task as scheduled (returns None)."},
    {"arrive", (PyCFunction)taskpath_arrive, METH_O,
     "arrive(tasks)\n--\n\nAs AdaptiveSchedulerPlugin._arrive(tasks): count and plan a graph's new tasks; how many "
     "it had (0: none)."},
    {"join_wave", (PyCFunction)taskpath_join_wave, METH_O,
     "join_wave(ts)\n--\n\nAs AdaptiveSchedulerPlugin._join_wave(ts): count a waiting task of the next wave."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TaskPathType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "asafe.schedulers._taskpath.TaskPath",
    .tp_basicsize = sizeof(TaskPath),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "TaskPath(plugin, entry_type, walk)\n--\n\n"
              "The compiled per-task path of an AdaptiveSchedulerPlugin (see asafe/schedulers/_taskpath.c).",
    .tp_new = taskpath_new,
    .tp_dealloc = (destructor)taskpath_dealloc,
    .tp_traverse = (traverseproc)taskpath_traverse,
    .tp_clear = (inquiry)taskpath_clear,
    .tp_methods = taskpath_methods,
};

static struct PyModuleDef taskpath_module = {
    PyModuleDef_HEAD_INIT, "asafe.schedulers._taskpath",
    "The compiled per-task path of the distributed scheduler plugin (see asafe/schedulers/_taskpath.c).", -1, NULL,
};

static int
intern(PyObject **target, const char *text)
{
    *target = PyUnicode_InternFromString(text);
    return *target == NULL ? -1 : 0;
}

PyMODINIT_FUNC
PyInit__taskpath(void)
{
    struct {
        PyObject **target;
        const char *text;
    } strings[] = {
        {&s_attached, "_attached"}, {&s_scheduled, "_scheduled"}, {&s_count_runnable, "_count_runnable"},
        {&s_expected_transfers, "expected_transfers"}, {&s_next_wave, "next_wave"},
        {&s_transfer_correction, "transfer_correction"}, {&s_evaluate_interval, "evaluate_interval"},
        {&s_next_evaluation, "_next_evaluation"}, {&s_events, "_events"}, {&s_default_type, "default_type"},
        {&s_enter, "_enter"}, {&s_finish, "_finish"}, {&s_became_ready, "_became_ready"}, {&s_join_wave, "_join_wave"},
        {&s_maybe_evaluate, "_maybe_evaluate"}, {&s_type_of, "_type_of"}, {&s_prior, "_prior"},
        {&s_discard, "_discard"}, {&s_settle, "_settle"}, {&s_p2p_event, "_p2p_event"},
        {&s_hook_failed, "_hook_failed"}, {&s_charge_transfers, "_charge_transfers"},
        {&s_ready, "ready"}, {&s_task_type, "task_type"}, {&s_prefix, "prefix"}, {&s_reuse, "reuse"},
        {&s_name, "name"}, {&s_key, "key"}, {&s_state, "state"}, {&s_run_spec, "run_spec"},
        {&s_annotations, "annotations"}, {&s_dependencies, "dependencies"}, {&s_dependents, "dependents"},
        {&s_finish_event, "finish"}, {&s_add, "add"}, {&s_remove, "remove"}, {&s_activate, "activate"}, {&s_finished, "finished"},
        {&s_released, "released"}, {&s_active_at, "active_at"}, {&s_evaluate, "evaluate"},
        {&s_input_finished, "input_finished"}, {&s_pending, "pending"}, {&s_recent_count, "_recent_count"},
        {&s_link, "link"}, {&s_startstops, "startstops"}, {&s_metadata, "metadata"}, {&s_nbytes, "nbytes"},
        {&s_worker, "worker"}, {&s_action, "action"}, {&s_compute, "compute"}, {&s_transfer, "transfer"},
        {&s_start, "start"}, {&s_stop, "stop"}, {&s_prior_kw, "prior"}, {&s_finished_kw, "finished"},
        {&s_waiting, "waiting"}, {&s_released_state, "released"}, {&s_memory, "memory"},
        {&s_processing, "processing"}, {&s_queued, "queued"}, {&s_no_worker, "no-worker"},
        {&s_communication, "communication"}, {&s_metadata_key, "asafe-nbytes"}, {&s_hook_name, "transition"},
        {&s_get, "get"},
    };
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        if (intern(strings[i].target, strings[i].text) < 0)
            return NULL;
    }
    if ((kw_prior = PyTuple_Pack(1, s_prior_kw)) == NULL || (kw_finished = PyTuple_Pack(1, s_finished_kw)) == NULL ||
        (kw_ready = PyTuple_Pack(1, s_ready)) == NULL || (float_zero = PyFloat_FromDouble(0.0)) == NULL ||
        (long_zero = PyLong_FromLong(0)) == NULL || (float_one = PyFloat_FromDouble(1.0)) == NULL)
        return NULL;
    if (intern(&s_tallies, "_tallies") < 0 || intern(&s_priors, "_priors") < 0 || intern(&s_run_types, "_run_types") < 0 ||
        intern(&s_run_seconds, "_run_seconds") < 0 || intern(&s_run_counts, "_run_counts") < 0 ||
        intern(&s_planned, "_planned") < 0 || intern(&s_recent, "_recent") < 0 || (long_one = PyLong_FromLong(1)) == NULL)
        return NULL;
    PyObject *tracker = PyImport_ImportModule("asafe.core.tracker");
    if (tracker == NULL)
        return NULL;
    batch_type = (PyTypeObject *)PyObject_GetAttrString(tracker, "EventBatch");
    PyObject *limit = batch_type ? PyObject_GetAttrString(tracker, "MAX_SECONDS") : NULL;
    Py_DECREF(tracker);
    if (limit == NULL)
        return NULL;
    max_seconds = PyFloat_AsDouble(limit);
    Py_DECREF(limit);
    if (max_seconds == -1.0 && PyErr_Occurred())
        return NULL;
    PyObject *p2p = PyImport_ImportModule("asafe.schedulers.p2p");
    if (p2p == NULL)
        return NULL;
    p2p_type = (PyTypeObject *)PyObject_GetAttrString(p2p, "P2PTraffic");
    is_barrier_fn = p2p_type ? PyObject_GetAttrString(p2p, "is_barrier") : NULL;
    Py_DECREF(p2p);
    if (is_barrier_fn == NULL)
        return NULL;
    if (!PyType_Check(batch_type) || !PyType_Check(p2p_type)) {
        PyErr_SetString(PyExc_TypeError, "asafe.core.tracker.EventBatch and asafe.schedulers.p2p.P2PTraffic must be classes");
        return NULL;
    }
    struct {
        PyObject **target;
        const char *text;
    } forecast_strings[] = {
        {&s_outputs, "_outputs"}, {&s_output_bytes, "output_bytes"}, {&s_crossed_bytes, "crossed_bytes"}, {&s_shipped, "shipped"}, {&s_edges, "edges"},
        {&s_active, "active"}, {&s_home, "home"}, {&s_items, "_items"}, {&s_planned_total, "planned"},
        {&s_consumer, "consumer"}, {&s_forecast, "forecast"}, {&s_bandwidth_now, "_bandwidth_now"},
        {&s_refine, "_refine"}, {&s_workers_call, "_workers"},
        {&s_memory_size, "_memory_size"}, {&s_worker_restrictions, "worker_restrictions"},
        {&s_set_forecast, "_set_forecast"}, {&s_submitted, "submitted"}, {&s_bandwidth_call, "_bandwidth"},
        {&s_measured, "measured"}, {&s_who_has, "who_has"}, {&s_arrive, "_arrive"}, {&s_link_memory, "memory"},
        {&s_remembered, "bandwidth"}, {&s_min_bytes, "min_bytes"},
    };
    for (size_t i = 0; i < sizeof(forecast_strings) / sizeof(forecast_strings[0]); i++) {
        if (intern(forecast_strings[i].target, forecast_strings[i].text) < 0)
            return NULL;
    }
    PyObject *forecast = PyImport_ImportModule("asafe.schedulers.forecast");
    if (forecast == NULL)
        return NULL;
    forecast_type = (PyTypeObject *)PyObject_GetAttrString(forecast, "TransferForecast");
    learn_rate = forecast_type ? PyObject_GetAttrString(forecast, "_LEARN") : NULL;
    size_learn_rate = learn_rate ? PyObject_GetAttrString(forecast, "_LEARN_SIZE") : NULL;
    Py_DECREF(forecast);
    if (size_learn_rate == NULL)
        return NULL;
    if ((forecast = PyImport_ImportModule("asafe.schedulers.forecast")) == NULL)
        return NULL;
    memory_type = (PyTypeObject *)PyObject_GetAttrString(forecast, "PrefixMemory");
    if (memory_type == NULL || !PyType_Check(memory_type)) {
        Py_DECREF(forecast);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "asafe.schedulers.forecast.PrefixMemory must be a class");
        return NULL;
    }
    output_type = PyObject_GetAttrString(forecast, "_Output");
    place_of = output_type ? PyObject_GetAttrString(forecast, "_place") : NULL;
    pinned_of = place_of ? PyObject_GetAttrString(forecast, "_pinned") : NULL;
    Py_DECREF(forecast);
    if (pinned_of == NULL)
        return NULL;
    if (!PyType_Check(forecast_type)) {
        PyErr_SetString(PyExc_TypeError, "asafe.schedulers.forecast.TransferForecast must be a class");
        return NULL;
    }
    PyObject *bandwidth = PyImport_ImportModule("asafe.schedulers.bandwidth");
    if (bandwidth == NULL)
        return NULL;
    link_type = (PyTypeObject *)PyObject_GetAttrString(bandwidth, "LinkEstimate");
    Py_DECREF(bandwidth);
    if (link_type == NULL)
        return NULL;
    if (!PyType_Check(link_type)) {
        PyErr_SetString(PyExc_TypeError, "asafe.schedulers.bandwidth.LinkEstimate must be a class");
        return NULL;
    }
    PyObject *protocol = PyImport_ImportModule("asafe.schedulers.protocol");
    if (protocol == NULL)
        return NULL;
    uncompressed_seconds = PyObject_GetAttrString(protocol, "uncompressed_seconds");
    Py_DECREF(protocol);
    if (uncompressed_seconds == NULL || PyType_Ready(&TaskPathType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&taskpath_module);
    if (module == NULL)
        return NULL;
    Py_INCREF(&TaskPathType);
    if (PyModule_AddObject(module, "TaskPath", (PyObject *)&TaskPathType) < 0) {
        Py_DECREF(&TaskPathType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
