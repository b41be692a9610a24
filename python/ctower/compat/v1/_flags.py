"""tf.flags and tf.app.flags: the part of absl's flags that TensorFlow 1.x
programs use, without absl.

    flags.DEFINE_string("data_dir", "/tmp/data", "where the data is")
    FLAGS = flags.FLAGS
    ...
    remaining = FLAGS(sys.argv)   # or tf.app.run(), which calls it

Command lines are parsed as absl parses them: `--name=value`, `--name
value`, `-name=value`, `--bool`, `--nobool`, `--bool=false`; arguments that
are not flags are kept (and parsing goes on past them); `--` ends the
flags. FLAGS(argv) returns argv[0] and the arguments it kept; unknown flags
raise UnrecognizedFlagError, or are kept with known_only=True (as
tf.app.run parses). Reading a flag before any parse parses sys.argv first,
as TensorFlow's FLAGS does. `--help` (also `--helpfull`, `--helpshort`, `-?`)
prints the flags and exits with status 1, as absl does.

FLAGS is one set of flags for the whole process, as TensorFlow's is.
"""
import sys as _sys


class Error(Exception):
    """absl's flags.Error: the base class of the errors below."""


class UnrecognizedFlagError(Error):
    def __init__(self, flagname, flagvalue=""):
        self.flagname = flagname
        self.flagvalue = flagvalue
        super().__init__("Unknown command line flag '%s'" % flagname)


class IllegalFlagValueError(Error):
    pass


class DuplicateFlagError(Error):
    pass


class UnparsedFlagAccessError(Error):
    pass


_HELP = ("help", "helpfull", "helpshort", "?")
_TRUE = ("true", "t", "1", "yes", "y")
_FALSE = ("false", "f", "0", "no", "n")


def _bounds_text(lower, upper, kind):
    if lower is not None and upper is not None:
        return "%s in the range [%s, %s]" % (kind, lower, upper)
    if lower == 0:
        return "a non-negative " + kind.split()[-1]
    if lower == 1 and kind == "an integer":
        return "a positive integer"
    if upper == 0:
        return "a non-positive " + kind.split()[-1]
    if lower is not None:
        return "%s >= %s" % (kind, lower)
    return "%s <= %s" % (kind, upper)


class Flag:
    """One flag: name, default, help, value, present (times given on the
    command line), boolean; parse(text) sets value from a command line's
    text."""

    def __init__(self, name, default, help, kind, convert, enum_values=None,
                 lower_bound=None, upper_bound=None, required=False):
        self.name = name
        self.help = help
        self.kind = kind  # "string", "integer", "float", "boolean", "list", "enum"
        self.boolean = kind == "boolean"
        self.enum_values = enum_values
        self._convert = convert
        self._bounds = (lower_bound, upper_bound)
        self.required = required
        self.present = 0
        self.default = self._value(default, default) if isinstance(default, str) else default
        if self.kind == "list" and isinstance(self.default, tuple):
            self.default = list(self.default)
        self.value = self.default
        self.using_default_value = True

    def _value(self, text, shown):
        try:
            value = self._convert(text)
        except ValueError as error:
            raise IllegalFlagValueError("flag --%s=%s: %s" % (self.name, shown, error)) from None
        lower, upper = self._bounds
        if (lower is not None and value < lower) or (upper is not None and value > upper):
            kind = "an integer" if self.kind == "integer" else "a number"
            raise IllegalFlagValueError("flag --%s=%s: %s is not %s" % (
                self.name, shown, value, _bounds_text(lower, upper, kind)))
        return value

    def parse(self, text):
        self.value = self._value(text, text)
        self.present += 1
        self.using_default_value = False

    def _usage(self):
        name = ("--[no]%s" % self.name) if self.boolean else "--%s" % self.name
        if self.enum_values:
            name += ": <%s>" % "|".join(self.enum_values)
        default = self.default
        if isinstance(default, list):
            default = ",".join(str(v) for v in default)
        elif isinstance(default, bool):
            default = str(default).lower()
        note = {"integer": "\n    (an integer)", "float": "\n    (a number)",
                "list": "\n    (a comma separated list)"}.get(self.kind, "")
        return "  %s: %s\n    (default: '%s')%s" % (name, self.help, default, note)


def _boolean(text):
    if isinstance(text, bool):
        return text
    lowered = str(text).lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("Non-boolean argument to boolean flag")


def _list(text):
    if isinstance(text, (list, tuple)):
        return list(text)
    return [item.strip() for item in text.split(",")] if text.strip() else []


class FlagValues:
    """absl's FlagValues: each flag's value as an attribute; calling it
    with argv parses a command line."""

    def __init__(self):
        self.__dict__["_flags"] = {}
        self.__dict__["_parsed"] = False

    # ---- values --------------------------------------------------------------------------

    def __getattr__(self, name):
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise AttributeError(name)
        if not self.__dict__["_parsed"]:
            self(_sys.argv)
        return flags[name].value

    def __setattr__(self, name, value):
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise UnrecognizedFlagError(name, value)
        flags[name].value = value
        flags[name].using_default_value = False

    def __getitem__(self, name):
        return self.__dict__["_flags"][name]

    def __contains__(self, name):
        return name in self.__dict__["_flags"]

    def __iter__(self):
        return iter(self.__dict__["_flags"])

    def __len__(self):
        return len(self.__dict__["_flags"])

    def __dir__(self):
        return sorted(self.__dict__["_flags"])

    def flag_values_dict(self):
        return {name: flag.value for name, flag in self.__dict__["_flags"].items()}

    def is_parsed(self):
        return self.__dict__["_parsed"]

    def mark_as_parsed(self):
        """Lets flags be read without parsing sys.argv: each keeps its value."""
        self.__dict__["_parsed"] = True

    def unparse_flags(self):
        for flag in self.__dict__["_flags"].values():
            flag.value, flag.present, flag.using_default_value = flag.default, 0, True
        self.__dict__["_parsed"] = False

    def _define(self, flag):
        flags = self.__dict__["_flags"]
        if flag.name in flags:
            raise DuplicateFlagError("The flag '%s' is defined twice. Description from first "
                                     "occurrence: %s" % (flag.name, flags[flag.name].help))
        flags[flag.name] = flag
        return flag

    # ---- parsing -------------------------------------------------------------------------

    def __call__(self, argv, known_only=False):
        """Parses argv[1:]; returns [argv[0]] and the arguments that are not
        flags of these (unknown flags among them when known_only)."""
        if isinstance(argv, str):
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        argv = list(argv)
        if not argv:
            raise ValueError("argv cannot be an empty list, and must contain the program name "
                             "as the first element.")
        kept = self._parse(argv[1:], known_only)
        self.__dict__["_parsed"] = True
        for flag in self.__dict__["_flags"].values():
            if flag.required and flag.value is None:
                raise IllegalFlagValueError(
                    "flag --%s=None: Flag --%s must have a value other than None."
                    % (flag.name, flag.name))
        return argv[:1] + kept

    def _parse(self, args, known_only):
        flags = self.__dict__["_flags"]
        kept = []
        k = 0
        while k < len(args):
            arg = args[k]
            k += 1
            if arg == "--":
                if known_only:
                    kept.append(arg)
                kept += args[k:]
                break
            if not arg.startswith("-") or arg == "-":
                kept.append(arg)
                continue
            name, has_value, value = arg.lstrip("-").partition("=")
            if name in _HELP and name not in flags:
                _sys.stdout.write(self._help())
                _sys.exit(1)
            flag = flags.get(name)
            if flag is None and name.startswith("no") and not has_value:
                negated = flags.get(name[2:])
                if negated is not None and negated.boolean:
                    negated.parse("false")
                    continue
            if flag is None:
                if known_only:
                    kept.append(arg)
                    continue
                raise UnrecognizedFlagError(name, value)
            if flag.boolean and not has_value:
                value = "true"
            elif not has_value:
                if k >= len(args):
                    raise Error("Missing value for flag " + arg)
                value = args[k]
                k += 1
            flag.parse(value)
        return kept

    def _help(self):
        main = _sys.modules.get("__main__")
        doc = getattr(main, "__doc__", None)
        program = _sys.argv[0] if _sys.argv and _sys.argv[0] else "program"
        lines = [doc.strip() if doc else "       USAGE: %s [flags]" % program, "flags:", ""]
        flags = self.__dict__["_flags"]
        if flags:
            lines.append("%s:" % program)
            lines += [flags[name]._usage() for name in sorted(flags)]
        return "\n".join(lines) + "\n"


FLAGS = FlagValues()

# TensorFlow 1.x's keyword names of the DEFINE functions -> absl's
_RENAMED = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _renamed(kwargs, name, default, help):
    """name, default and help, given by absl's names or TensorFlow 1.x's."""
    a = {_RENAMED.get(k, k): v for k, v in kwargs.items()}
    return (a.get("name") if name is None else name,
            a.get("default") if default is None else default,
            a.get("help") if help is None else help)


def _define(kind, convert, name, default, help, flag_values, **extra):
    return (FLAGS if flag_values is None else flag_values)._define(Flag(name, default, help, kind, convert, **extra))


def _string(text):
    return text if text is None else str(text)


def DEFINE_string(name=None, default=None, help=None, flag_values=None, required=False,
                  **kwargs):
    name, default, help = _renamed(kwargs, name, default, help)
    return _define("string", _string, name, default, help, flag_values,
                   required=required)


def DEFINE_integer(name=None, default=None, help=None, lower_bound=None, upper_bound=None,
                   flag_values=None, required=False, **kwargs):
    name, default, help = _renamed(kwargs, name, default, help)
    return _define("integer", int, name, default, help, flag_values,
                   lower_bound=lower_bound, upper_bound=upper_bound, required=required)


def DEFINE_float(name=None, default=None, help=None, lower_bound=None, upper_bound=None,
                 flag_values=None, required=False, **kwargs):
    name, default, help = _renamed(kwargs, name, default, help)
    return _define("float", float, name, default, help, flag_values,
                   lower_bound=lower_bound, upper_bound=upper_bound, required=required)


def DEFINE_boolean(name=None, default=None, help=None, flag_values=None, module_name=None,
                   required=False, **kwargs):
    name, default, help = _renamed(kwargs, name, default, help)
    return _define("boolean", _boolean, name, default, help, flag_values,
                   required=required)


DEFINE_bool = DEFINE_boolean


def DEFINE_list(name, default, help, flag_values=None, required=False, **args):
    return _define("list", _list, name, default, help, flag_values, required=required)


def DEFINE_enum(name, default, enum_values, help, flag_values=None, module_name=None,
                required=False, **args):
    enum_values = list(enum_values)

    def convert(text):
        if text not in enum_values:
            raise ValueError("value should be one of <%s>" % "|".join(enum_values))
        return text
    return _define("enum", convert, name, default, help, flag_values, enum_values=enum_values,
                   required=required)
