#!/usr/bin/env python3
"""lint-tests.py - find bats tests that cannot fail (`make lint-tests`).

Usage: python3 tools/lint-tests.py [--root DIR] [FILE...]

With no FILE it checks t/*.bats, t/*.bash, t/lib/*.bash and the Makefile
under DIR (default: the current directory). A FILE ending in .bats is
checked as a test file, one ending in .bash as a helper file, any other as
a Makefile. Prints one "FILE:LINE: RULE: message" per finding and exits 1
when there is one, 0 when there is none, 2 on a usage error.

Bats runs a test body under `set -e` and judges the test by the status of
its last command; setup and setup_file likewise, so the first four rules
apply to their bodies too ("test body" below). The rules (each names the
way a check is lost):

and-list   An and-or list whose last operator is `&&` (`[ a ] && [ b ]`,
           `cmd && [ x ]`): `set -e` ignores the failure of any command
           before the final `&&`. Flagged anywhere in a test body except:
           the body's last command; the last command of a `{ }` group,
           `if` branch or `case` branch that is itself in last position;
           the last command of a `( )` subshell (its status is checked);
           a condition of `if`/`elif`/`while`/`until`; the left side of
           another `&&`/`||`; a pipeline element other than the last; a
           list ending in a control command (`&& skip ...`, `fail`,
           `false`, `return`, `exit`, `break`, `continue`) or in an
           assignment (`&& x=1`), which are conditions, not assertions.
           A loop body is never in last position (only the last
           iteration would count). Write one check per line, or
           `if ...; then ...; fi`.
or-echo    `cmd || echo ...` or `|| printf ...` where set -e applies: the
           echo succeeds, so the failure of cmd is swallowed. Write
           `cmd || fail "..."`. Deliberate ignores end in `|| true`,
           `|| :` or `|| rc=$?` and are not flagged.
negation   `! cmd` outside last position: set -e ignores a negated
           pipeline. Write `run ! cmd` or `refute ...`.
unchecked-run
           A `run` without `-N` or `!` whose $status, $output, $stderr,
           ${lines[@]} or ${stderr_lines[@]} nothing reads before the
           next `run` or the end of the test: no assert_success,
           assert_failure, assert_output, refute_output, assert_line,
           refute_line, no command (other than echo/printf) that names one
           of those variables, and no call of a helper function whose body
           names one of them.
redefines  A helper or test file defines a function of bats-core,
           bats-support, bats-assert or bats-file (fail, assert*,
           refute*, batslib_*, run, skip, load, temp_make, temp_del):
           every assertion then calls the impostor.
empty-glob A word of a *_BATS variable in a Makefile (a path or the
           pattern of a $(wildcard ...)) that matches no file.
parse      The file could not be parsed: the linter cannot vouch for it.
"""

import glob
import os
import re
import sys

RUN_VARS = re.compile(
    r'\$\{?#?(status|output|stderr|lines|stderr_lines)\b')
RUN_ASSERTS = {
    'assert_success', 'assert_failure', 'assert_output', 'refute_output',
    'assert_line', 'refute_line', 'assert_stderr', 'refute_stderr',
    'assert_stderr_line', 'refute_stderr_line',
}
SET_E_HOOKS = ('setup', 'setup_file')     # checked like test bodies
CONTROL = {'skip', 'fail', 'false', 'return', 'exit', 'break', 'continue'}
PRINTERS = {'echo', 'printf'}
BATS_LIB = re.compile(
    r'^(fail|assert|refute|assert_\w+|refute_\w+|batslib_\w+|run|skip|'
    r'load|temp_make|temp_del)$')
RESERVED_END = {'}', 'then', 'else', 'elif', 'fi', 'do', 'done', 'esac'}
OPS = ['<<<', '<<-', ';;&', '&>>', '&&', '||', ';;', ';&', '|&', '&>',
       '>>', '<<', '<&', '>&', '<>', '>|', ';', '&', '|', '(', ')', '<',
       '>']
REDIRS = {'<<<', '<<-', '&>>', '&>', '>>', '<<', '<&', '>&', '<>', '>|',
          '<', '>'}
NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
ASSIGN = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=')
TEST_LINE = re.compile(r'^([ \t]*)@test[ \t]+(.*[^ \t])[ \t]+\{(.*)$')


class ParseError(Exception):
    def __init__(self, line, msg):
        Exception.__init__(self, msg)
        self.line = line


class Tok:
    def __init__(self, kind, val, line, lit=None):
        self.kind = kind        # WORD, OP, NL, EOF
        self.val = val          # raw text
        self.line = line
        self.lit = lit          # the word when wholly unquoted, else None


class Lexer:
    """Splits bash source into words and operators, the way bash does
    for what these tests use: quotes, $( ), ${ }, $(( )), backquotes,
    [[ ]], (( )), arrays, process substitution, here-documents."""

    def __init__(self, text):
        self.s = text
        self.i = 0
        self.line = 1
        self.toks = []
        self.heredocs = []

    def err(self, msg, line=None):
        raise ParseError(self.line if line is None else line, msg)

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ''

    def adv(self, k=1):
        self.line += self.s.count('\n', self.i, self.i + k)
        self.i += k

    def run(self):
        while self.i < len(self.s):
            c = self.peek()
            if c == '\\' and self.peek(1) == '\n':
                self.adv(2)
            elif c in ' \t':
                self.adv()
            elif c == '\n':
                self.toks.append(Tok('NL', '\n', self.line))
                self.adv()
                self.read_heredocs()
            elif c == '#':
                while self.i < len(self.s) and self.peek() != '\n':
                    self.adv()
            elif self.s.startswith('((', self.i):
                self.arith_command()
            elif c in '<>' and self.peek(1) == '(':
                self.word()
            elif self.op():
                pass
            else:
                self.word()
        if self.heredocs:
            self.err('unterminated here-document')
        self.toks.append(Tok('EOF', '', self.line))
        return self.toks

    def op(self):
        for o in OPS:
            if self.s.startswith(o, self.i):
                line = self.line
                self.adv(len(o))
                self.toks.append(Tok('OP', o, line))
                if o in ('<<', '<<-'):
                    self.heredoc_start(o == '<<-')
                return True
        return False

    def heredoc_start(self, strip):
        while self.peek() in (' ', '\t'):
            self.adv()
        start = self.i
        self.word()
        raw = self.s[start:self.i]
        delim = re.sub(r'[\'"\\]', '', raw)
        self.heredocs.append((delim, strip))

    def read_heredocs(self):
        while self.heredocs:
            delim, strip = self.heredocs.pop(0)
            while True:
                if self.i >= len(self.s):
                    self.err('here-document "%s" not closed' % delim)
                end = self.s.find('\n', self.i)
                if end < 0:
                    end = len(self.s)
                text = self.s[self.i:end]
                self.adv(end - self.i + (1 if end < len(self.s) else 0))
                if (text.lstrip('\t') if strip else text) == delim:
                    break

    def arith_command(self):
        line, start = self.line, self.i
        self.adv(2)
        self.balanced('(', ')', 1)
        if self.peek() != ')':
            self.err('(( without ))')
        self.adv()
        self.toks.append(Tok('WORD', self.s[start:self.i], line, '(( ))'))

    def balanced(self, open_c, close_c, depth):
        """Advances past the close_c that ends depth levels of nesting,
        skipping quoted parts."""
        line = self.line
        while depth:
            c = self.peek()
            if c == '':
                self.err('unbalanced %s' % open_c, line)
            if c == close_c:
                depth -= 1
                self.adv()
            elif c == open_c:
                depth += 1
                self.adv()
            elif c == '#' and open_c == '(' and self.s[self.i - 1] in ' \t\n':
                while self.peek() not in ('\n', ''):
                    self.adv()
            else:
                self.quoted_part()

    def quoted_part(self):
        """Advances over one character or one quoted/expansion unit."""
        c, n = self.peek(), self.peek(1)
        line = self.line
        if c == '\\':
            self.adv(2)
        elif c == "'":
            self.adv()
            self.until("'", line)
        elif c == '$' and n == "'":
            self.adv(2)
            while self.peek() != "'":
                if self.peek() == '':
                    self.err("unterminated $'", line)
                self.adv(2 if self.peek() == '\\' else 1)
            self.adv()
        elif c == '"' or (c == '$' and n == '"'):
            self.adv(1 if c == '"' else 2)
            self.dquote(line)
        elif c == '$' and n == '(':
            self.adv(2)
            self.balanced('(', ')', 1)
        elif c == '$' and n == '{':
            self.adv(2)
            self.balanced('{', '}', 1)
        elif c == '`':
            self.adv()
            while self.peek() != '`':
                if self.peek() == '':
                    self.err('unterminated `', line)
                self.adv(2 if self.peek() == '\\' else 1)
            self.adv()
        else:
            self.adv()

    def until(self, q, line):
        j = self.s.find(q, self.i)
        if j < 0:
            self.err('unterminated %s' % q, line)
        self.adv(j - self.i + 1)

    def dquote(self, line):
        while True:
            c = self.peek()
            if c == '':
                self.err('unterminated "', line)
            if c == '"':
                self.adv()
                return
            if c == '\\':
                self.adv(2)
            elif c in '$`':
                self.quoted_part()
            else:
                self.adv()

    def word(self):
        line, start = self.line, self.i
        while self.i < len(self.s):
            c, n = self.peek(), self.peek(1)
            if c == '\\' and n == '\n':
                self.adv(2)
            elif c in ' \t\n;&|':
                break
            elif c in '<>' and n == '(':
                self.adv(2)
                self.balanced('(', ')', 1)
            elif c in '<>':
                if self.s[start:self.i].isdigit():
                    self.i = start      # an fd number: part of the redirection
                    self.line = line
                    j = start
                    while self.s[j].isdigit():
                        j += 1
                    self.adv(j - start)
                    self.op()
                    return
                break
            elif c == '(' and ASSIGN.match(self.s[start:self.i] + '\0') \
                    and self.s[self.i - 1] == '=':
                self.adv()
                self.balanced('(', ')', 1)
            elif c == '(' and self.i > start and self.s[self.i - 1] in '@!+*?':
                self.adv()
                self.balanced('(', ')', 1)
            elif c in '()':
                break
            else:
                self.quoted_part()
        raw = self.s[start:self.i]
        if raw == '':
            self.err('unexpected %r' % self.peek())
        lit = raw if re.match(r'^[^\'"\\$`]*$', raw) else None
        if lit == '[[':
            self.test_command(line, start)
            return
        self.toks.append(Tok('WORD', raw, line, lit))

    def test_command(self, line, start):
        """[[ ... ]] as one word: its && || ( ) < > belong to the test."""
        while True:
            while self.peek() in (' ', '\t'):
                self.adv()
            if self.peek() == '\\' and self.peek(1) == '\n':
                self.adv(2)
                continue
            if self.peek() == '':
                self.err('[[ without ]]')
            if self.s.startswith(']]', self.i) and \
                    self.peek(2) in ('', ' ', '\t', '\n', ';', '&', '|', ')'):
                self.adv(2)
                break
            while self.peek() not in ('', ' ', '\t', '\n'):
                self.quoted_part()
            if self.peek() == '\n':
                self.adv()
        self.toks.append(Tok('WORD', self.s[start:self.i], line, '[[ ]]'))


class Node:
    def __init__(self, kind, line, **kw):
        self.kind = kind
        self.line = line
        self.end = line
        self.__dict__.update(kw)


class Parser:
    """Recursive descent over the tokens: lists, and-or lists,
    pipelines, simple and compound commands, function definitions."""

    def __init__(self, toks):
        self.t = toks
        self.k = 0

    def cur(self):
        return self.t[self.k]

    def take(self):
        tok = self.t[self.k]
        self.k += 1
        return tok

    def is_op(self, *vals):
        return self.cur().kind == 'OP' and self.cur().val in vals

    def is_word(self, *vals):
        return self.cur().kind == 'WORD' and self.cur().lit in vals

    def expect_word(self, val):
        if not self.is_word(val):
            raise ParseError(self.cur().line, 'expected "%s", found "%s"'
                             % (val, self.cur().val))
        self.take()

    def expect_op(self, val):
        if not self.is_op(val):
            raise ParseError(self.cur().line, 'expected "%s", found "%s"'
                             % (val, self.cur().val))
        self.take()

    def newlines(self):
        while self.cur().kind == 'NL':
            self.take()

    def at_list_end(self):
        c = self.cur()
        return c.kind == 'EOF' or \
            (c.kind == 'OP' and c.val in (')', ';;', ';&', ';;&')) or \
            (c.kind == 'WORD' and c.lit in RESERVED_END)

    def parse_list(self):
        items = []
        while True:
            while self.cur().kind == 'NL' or self.is_op(';'):
                self.take()
            if self.at_list_end():
                return items
            ao = self.parse_andor()
            if self.is_op('&'):
                self.take()
                ao.background = True
            items.append(ao)

    def parse_andor(self):
        line = self.cur().line
        pipes = [self.parse_pipeline()]
        ops = []
        while self.is_op('&&', '||'):
            ops.append(self.take().val)
            self.newlines()
            pipes.append(self.parse_pipeline())
        return Node('andor', line, pipes=pipes, ops=ops, background=False)

    def parse_pipeline(self):
        line = self.cur().line
        neg = False
        while self.is_word('!', 'time'):
            neg = neg or self.take().lit == '!'
        cmds = [self.parse_command()]
        while self.is_op('|', '|&'):
            self.take()
            self.newlines()
            cmds.append(self.parse_command())
        for c in cmds:
            c.piped = len(cmds) > 1
        return Node('pipe', line, cmds=cmds, negated=neg)

    def parse_command(self):
        c = self.cur()
        if c.kind == 'OP' and c.val == '(':
            self.take()
            body = self.parse_list()
            self.expect_op(')')
            node = Node('subshell', c.line, body=body)
        elif c.kind == 'WORD' and c.lit == '{':
            self.take()
            body = self.parse_list()
            self.expect_word('}')
            node = Node('group', c.line, body=body)
        elif c.kind == 'WORD' and c.lit == 'if':
            node = self.parse_if()
        elif c.kind == 'WORD' and c.lit in ('while', 'until'):
            self.take()
            cond = self.parse_list()
            self.expect_word('do')
            body = self.parse_list()
            self.expect_word('done')
            node = Node('loop', c.line, cond=cond, body=body, words=[])
        elif c.kind == 'WORD' and c.lit in ('for', 'select'):
            node = self.parse_for()
        elif c.kind == 'WORD' and c.lit == 'case':
            node = self.parse_case()
        elif c.kind == 'WORD' and c.lit == 'function':
            self.take()
            name = self.take().val
            if self.is_op('('):
                self.take()
                self.expect_op(')')
            self.newlines()
            node = Node('func', c.line, name=name, body=self.parse_command())
        elif c.kind == 'WORD' and NAME.match(c.val) and \
                self.t[self.k + 1].kind == 'OP' and \
                self.t[self.k + 1].val == '(' and \
                self.t[self.k + 2].kind == 'OP' and \
                self.t[self.k + 2].val == ')':
            self.k += 3
            self.newlines()
            node = Node('func', c.line, name=c.val, body=self.parse_command())
        else:
            return self.parse_simple()
        self.redirections(node)
        node.end = self.t[self.k - 1].line
        return node

    def redirections(self, node):
        words = []
        while self.is_op(*REDIRS):
            self.take()
            if self.cur().kind != 'WORD':
                raise ParseError(self.cur().line, 'redirection without target')
            words.append(self.take().val)
        node.redir = words

    def parse_if(self):
        line = self.take().line
        conds, bodies = [], []
        conds.append(self.parse_list())
        self.expect_word('then')
        bodies.append(self.parse_list())
        while self.is_word('elif'):
            self.take()
            conds.append(self.parse_list())
            self.expect_word('then')
            bodies.append(self.parse_list())
        if self.is_word('else'):
            self.take()
            bodies.append(self.parse_list())
        self.expect_word('fi')
        return Node('if', line, conds=conds, bodies=bodies)

    def parse_for(self):
        line = self.take().line
        words = []
        if self.cur().kind == 'WORD' and self.cur().lit == '(( ))':
            words.append(self.take().val)
        else:
            self.take()     # the name
            while self.cur().kind == 'NL':
                self.take()
            if self.is_word('in'):
                self.take()
                while self.cur().kind == 'WORD':
                    words.append(self.take().val)
        while self.cur().kind == 'NL' or self.is_op(';'):
            self.take()
        self.expect_word('do')
        body = self.parse_list()
        self.expect_word('done')
        return Node('loop', line, cond=[], body=body, words=words)

    def parse_case(self):
        line = self.take().line
        subject = self.take().val
        self.newlines()
        self.expect_word('in')
        branches = []
        while True:
            self.newlines()
            if self.is_word('esac'):
                self.take()
                break
            if self.is_op('('):
                self.take()
            while not self.is_op(')'):
                if self.cur().kind == 'EOF':
                    raise ParseError(line, 'case without esac')
                self.take()
            self.take()
            branches.append(self.parse_list())
            if self.is_op(';;', ';&', ';;&'):
                self.take()
        return Node('case', line, bodies=branches, words=[subject])

    def parse_simple(self):
        line = self.cur().line
        words, redir = [], []
        while True:
            c = self.cur()
            if c.kind == 'WORD':
                words.append(self.take())
            elif c.kind == 'OP' and c.val in REDIRS:
                self.take()
                if self.cur().kind != 'WORD':
                    raise ParseError(c.line, 'redirection without target')
                redir.append(self.take().val)
            else:
                break
        if not words and not redir:
            raise ParseError(line, 'syntax error near "%s"' %
                             self.cur().val.replace('\n', '\\n'))
        name, args = None, []
        for w in words:
            if name is None and not args and ASSIGN.match(w.val):
                continue
            if name is None:
                name = w.lit if w.lit is not None else w.val
            args.append(w.val)
        node = Node('simple', line, name=name, args=args,
                    raw=' '.join(w.val for w in words + []) + ' ' +
                    ' '.join(redir))
        node.end = self.t[self.k - 1].line
        return node


def parse(text):
    toks = Lexer(text).run()
    p = Parser(toks)
    items = p.parse_list()
    if p.cur().kind != 'EOF':
        raise ParseError(p.cur().line, 'unexpected "%s"' % p.cur().val)
    return items


def bats_to_bash(text):
    """@test "name" { ... becomes a function __bats_test_N, keeping lines."""
    out, names = [], {}
    for line in text.split('\n'):
        m = TEST_LINE.match(line)
        if m:
            fn = '__bats_test_%d' % len(names)
            names[fn] = m.group(2)
            line = '%s%s() {%s' % (m.group(1), fn, m.group(3))
        out.append(line)
    return '\n'.join(out), names


def functions(items):
    """Every function definition, nested ones too."""
    found = []

    def walk(node):
        if isinstance(node, list):
            for n in node:
                walk(n)
            return
        if node.kind == 'func':
            found.append(node)
        for attr in ('pipes', 'cmds', 'body', 'bodies', 'conds'):
            sub = getattr(node, attr, None)
            if isinstance(sub, list):
                walk(sub)
            elif isinstance(sub, Node):
                walk(sub)
    walk(items)
    return found


class Linter:
    def __init__(self, root):
        self.root = root
        self.findings = []
        self.run_helpers = set()

    def report(self, path, line, rule, msg):
        self.findings.append((path, line, rule, msg))

    def load(self, path):
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        names = {}
        if path.endswith('.bats'):
            text, names = bats_to_bash(text)
        try:
            return parse(text), names, text.split('\n')
        except ParseError as e:
            self.report(path, e.line, 'parse', str(e))
            return None, names, None

    def learn_helpers(self, items, lines):
        """Functions whose bodies read run's variables count as checks."""
        for fn in functions(items):
            if fn.name.startswith('__bats_test_'):
                continue
            body = '\n'.join(lines[fn.line - 1:fn.body.end])
            if RUN_VARS.search(body) or \
                    any(re.search(r'\b%s\b' % a, body) for a in RUN_ASSERTS):
                self.run_helpers.add(fn.name)

    def check_redefines(self, path, items):
        for fn in functions(items):
            if BATS_LIB.match(fn.name):
                self.report(path, fn.line, 'redefines',
                            'function %s() hides the bats library\'s %s'
                            % (fn.name, fn.name))

    # -- set -e rules ------------------------------------------------------

    def walk_list(self, items, final_ok):
        for idx, ao in enumerate(items):
            self.walk_andor(ao, final_ok and idx == len(items) - 1)

    def walk_andor(self, ao, final):
        if ao.background:
            return
        tail = ao.pipes[-1]
        if ao.ops:
            if ao.ops[-1] == '&&' and not final and not control_tail(tail):
                self.report(self.path, ao.line, 'and-list',
                            'a failure before the last && is not checked '
                            '(set -e ignores it): one check per line')
            if ao.ops[-1] == '||' and printer_tail(tail):
                self.report(self.path, ao.line, 'or-echo',
                            '"|| echo" swallows the failure: use || fail')
        self.walk_pipe(tail, final)

    def walk_pipe(self, pipe, final):
        if pipe.negated:
            if not final:
                self.report(self.path, pipe.line, 'negation',
                            '"! cmd" is not checked by set -e: use run ! '
                            'or refute')
            return
        cmd = pipe.cmds[-1]
        self.walk_cmd(cmd, final or len(pipe.cmds) > 1)

    def walk_cmd(self, cmd, final):
        if cmd.kind in ('group',):
            self.walk_list(cmd.body, final)
        elif cmd.kind == 'subshell':
            self.walk_list(cmd.body, True)
        elif cmd.kind in ('if', 'case'):
            for b in cmd.bodies:
                self.walk_list(b, final)
        elif cmd.kind == 'loop':
            self.walk_list(cmd.body, False)

    # -- run rule ----------------------------------------------------------

    def commands(self, items):
        """The simple commands (and loop/case words) in source order."""
        out = []

        def walk(node):
            if isinstance(node, list):
                for n in node:
                    walk(n)
                return
            if node.kind == 'simple':
                out.append(node)
                return
            if node.kind == 'func':
                return
            for w in getattr(node, 'words', []):
                out.append(Node('simple', node.line, name=None, args=[w],
                                raw=w))
            if node.kind == 'if':
                for k, b in enumerate(node.bodies):
                    if k < len(node.conds):
                        walk(node.conds[k])
                    walk(b)
            for attr in ('pipes', 'cmds', 'cond') + \
                    (('bodies',) if node.kind != 'if' else ()):
                walk(getattr(node, attr, []))
            body = getattr(node, 'body', None)
            if body is not None:
                walk(body)
            for w in getattr(node, 'redir', []):
                out.append(Node('simple', node.line, name=None, args=[w],
                                raw=w))
        walk(items)
        return out

    def uses_run(self, cmd):
        if cmd.name in RUN_ASSERTS or cmd.name in self.run_helpers:
            return True
        if cmd.name in PRINTERS and not getattr(cmd, 'piped', False):
            return False
        return bool(RUN_VARS.search(cmd.raw))

    def check_runs(self, body):
        cmds = self.commands(body)
        for i, c in enumerate(cmds):
            if c.name != 'run' or run_checks_status(c.args):
                continue
            used = False
            for d in cmds[i + 1:]:
                if d.name == 'run':
                    break
                if self.uses_run(d):
                    used = True
                    break
            if not used:
                self.report(self.path, c.line, 'unchecked-run',
                            'nothing checks the status or output of this run')

    def lint_bats(self, path, items, names):
        self.path = path
        for fn in functions(items):
            if fn.name not in names and fn.name not in SET_E_HOOKS:
                continue
            body = fn.body.body if fn.body.kind == 'group' else [fn.body]
            self.walk_list(body, True)
            self.check_runs(body)

    # -- Makefile ----------------------------------------------------------

    def lint_makefile(self, path):
        with open(path, encoding='utf-8', errors='replace') as f:
            lines = f.read().split('\n')
        i = 0
        while i < len(lines):
            m = re.match(r'^(\w*BATS)\s*[:?+]?=(.*)$', lines[i])
            start = i
            if not m:
                i += 1
                continue
            value = m.group(2)
            while value.endswith('\\') and i + 1 < len(lines):
                i += 1
                value = value[:-1] + ' ' + lines[i]
            i += 1
            # As make does: a comment runs from the first unescaped # to
            # the end of the (continued) line.
            value = re.sub(r'(?<!\\)#.*$', '', value)
            for word in value.split():
                word = word.rstrip(')')
                if '$' in word or word == '':
                    continue
                if not glob.glob(os.path.join(self.root, word)):
                    self.report(path, start + 1, 'empty-glob',
                                '%s: "%s" matches no file'
                                % (m.group(1), word))


def control_tail(pipe):
    if pipe.negated or len(pipe.cmds) != 1:
        return False
    c = pipe.cmds[0]
    return c.kind == 'simple' and (c.name in CONTROL or c.name is None)


def printer_tail(pipe):
    if pipe.negated or len(pipe.cmds) != 1:
        return False
    c = pipe.cmds[0]
    if c.kind == 'group' and c.body:
        return printer_tail(c.body[-1].pipes[-1])
    return c.kind == 'simple' and c.name in PRINTERS


def run_checks_status(args):
    for a in args[1:]:
        if a == '!' or re.match(r'^-[0-9]+$', a):
            return True
        if a == '--' or not a.startswith('-'):
            return False
    return False


def main(argv):
    root = '.'
    args = argv[1:]
    if args[:1] == ['--root']:
        if len(args) < 2:
            sys.stderr.write('usage: lint-tests.py [--root DIR] [FILE...]\n')
            return 2
        root, args = args[1], args[2:]
    if any(a.startswith('-') for a in args):
        sys.stderr.write('usage: lint-tests.py [--root DIR] [FILE...]\n')
        return 2
    helpers = sorted(glob.glob(os.path.join(root, 't', '*.bash')) +
                     glob.glob(os.path.join(root, 't', 'lib', '*.bash')))
    files = args or (sorted(glob.glob(os.path.join(root, 't', '*.bats'))) +
                     helpers + [os.path.join(root, 'Makefile')])
    lint = Linter(root)
    parsed = []
    for path in sorted(set(helpers) | set(files)):
        if not path.endswith(('.bats', '.bash')):
            continue
        items, names, lines = lint.load(path) if path in files else \
            Linter(root).load(path)
        if items is None:
            continue
        lint.learn_helpers(items, lines)
        if path in files:
            parsed.append((path, items, names))
    for path, items, names in parsed:
        lint.check_redefines(path, items)
        if path.endswith('.bats'):
            lint.lint_bats(path, items, names)
    for path in files:
        if not path.endswith(('.bats', '.bash')):
            lint.lint_makefile(path)
    for f in sorted(lint.findings, key=lambda x: (x[0], x[1])):
        sys.stdout.write('%s:%d: %s: %s\n'
                         % ((os.path.normpath(f[0]),) + f[1:]))
    sys.stdout.flush()
    ntests = sum(len(n) for _, _, n in parsed)
    sys.stderr.write('lint-tests: %d files, %d tests, %d findings\n'
                     % (len(files), ntests, len(lint.findings)))
    return 1 if lint.findings else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
