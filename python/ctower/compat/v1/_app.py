"""tf.app.run, as TensorFlow 1.x's (absl's app.run beneath it): parses the
command line's flags into tf.flags.FLAGS, keeping the arguments and unknown
flags that are not its own, then calls main with them and exits with what
main returns (sys.exit(main(argv))).

A flag given a value it cannot take (`--steps=abc`) ends the program with
status 1 and the line "FATAL Flags parsing error: ...", as absl's app.run
reports it (TensorFlow 2's compat.v1 app.run raises the error instead)."""
import sys as _sys

from ctower.compat.v1 import _flags


def run(main=None, argv=None):
    """Runs main (else __main__'s main) with argv (else sys.argv) less the
    flags FLAGS defines; exits the process with main's return value."""
    main = main or _sys.modules["__main__"].main
    try:
        args = _flags.FLAGS(_sys.argv if argv is None else argv, known_only=True)
    except _flags.Error as error:
        _sys.stderr.write("FATAL Flags parsing error: %s\n" % error)
        _sys.stderr.write("Pass --help to see help on flags.\n")
        _sys.exit(1)
    _sys.exit(main(args))
