"""A session closed from one thread while others run it, save or restore
its variables: calls after the close raise TensorFlow's RuntimeError
("Attempted to use a closed Session."), the close waits for the call in
flight, and nothing crashes. Each stress loop runs in a process of its own
(a crash is a failed test, not a lost test run) and is bounded in time."""
import textwrap

from conftest import run_script

_STRESS = textwrap.dedent("""
    import threading, time, tempfile, os
    import numpy as np
    import ctower.compat.v1 as tf

    x = tf.placeholder(tf.float32, [400, 400])
    y = x
    for _ in range(8):
        y = tf.matmul(y, x) / 400.0
    v = tf.get_variable("v", [300, 300])
    step = tf.group(y, v.assign_add(tf.ones([300, 300])))
    saver = tf.train.Saver([v])
    value = np.full((400, 400), 0.5, np.float32)
    folder = tempfile.mkdtemp()
    rounds, unexpected = 0, []
    deadline = time.monotonic() + %(seconds)s

    def work(sess, what, path):
        try:
            for _ in range(50):
                if what == "run":
                    sess.run(step, {x: value})
                elif what == "save":
                    saver.save(sess, path, write_state=False)
                elif what == "restore":
                    saver.restore(sess, path)
                else:
                    sess.run(v)
        except RuntimeError as e:
            if str(e) != "Attempted to use a closed Session.":
                unexpected.append(repr(e))
        except Exception as e:
            unexpected.append(repr(e))

    while time.monotonic() < deadline:
        sess = tf.Session()
        path = os.path.join(folder, "m%%d" %% rounds)
        saver.save(sess, path, write_state=False)
        threads = [threading.Thread(target=work, args=(sess, what, path))
                   for what in ("run", "save", "restore", "read", "run")]
        for t in threads:
            t.start()
        time.sleep(0.002 * (rounds %% 10))
        sess.close()
        for t in threads:
            t.join()
        try:
            sess.run(v)
            unexpected.append("a run after close")
        except RuntimeError as e:
            assert str(e) == "Attempted to use a closed Session.", e
        rounds += 1
    print("rounds", rounds, "unexpected", unexpected)
    assert not unexpected and rounds > 0
""")


def test_close_while_runs_saves_and_restores_are_in_flight():
    code, out, err = run_script(_STRESS % {"seconds": 4.0}, timeout=120)
    assert code == 0, "exit %d\n%s\n%s" % (code, out, err[-3000:])
    assert "unexpected []" in out


_TIMES_DURING_RUNS = textwrap.dedent("""
    import threading
    import numpy as np
    import ctower.compat.v1 as tf

    x = tf.placeholder(tf.float32, [200, 200])
    y = x
    for _ in range(4):
        y = tf.matmul(y, x)
    sess = tf.Session()
    value = np.ones((200, 200), np.float32)
    done = threading.Event()

    def work():
        for _ in range(30):
            sess.run(y, {x: value})
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    while not done.is_set():
        assert sess._engine().last_run_seconds() >= 0.0
    thread.join()
    sess.close()
    print("ok")
""")


def test_the_last_runs_time_is_read_while_another_thread_runs():
    # under ThreadSanitizer (scripts/test.sh), a race on the time is reported
    code, out, err = run_script(_TIMES_DURING_RUNS, timeout=120)
    assert code == 0 and out.strip() == "ok", err[-3000:]
