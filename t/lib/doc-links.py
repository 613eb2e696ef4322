#!/usr/bin/env python3
"""doc-links.py - links between the doc pages land on existing headings.

Usage: doc-links.py ROOT

Reads ROOT/share/doc/*.md, ROOT/README and the runbook_url of every alert
in ROOT/share/doc/alerts.yml, and checks three kinds of reference:

  [text](page.md#anchor), [text](#anchor), [text](page.md)
      the page exists and has a heading whose GitHub anchor is `anchor`
      (lowercased; every character but letters, digits, `_`, `-` and
      spaces dropped; spaces to `-`; a repeated heading gets -1, -2 ...)
  runbook_url: "https://HOST/share/doc/page.md#anchor"   (alerts.yml)
      the same, for the page under share/doc
  page.md, "Heading"   (prose, possibly across a line break)
      the page exists and one of its headings starts with Heading

Headings and links inside code blocks (fenced, or indented by four
spaces or a tab) are not headings and not links. Prints one line per
broken reference, FILE:LINE: what; exits 1 when there is one, else 0.
"""
import glob
import os
import re
import sys

FENCE = re.compile(r'^\s*(```|~~~)')
INDENTED = re.compile(r'^(    |\t)')


def text_lines(path):
    """(line number, line) of the lines outside code blocks."""
    fence = False
    with open(path, encoding='utf-8') as f:
        for i, line in enumerate(f, 1):
            if FENCE.match(line):
                fence = not fence
                continue
            if fence or (path.endswith('.md') and INDENTED.match(line)):
                continue
            yield i, line.rstrip('\n')


def headings(path):
    """The page's headings as written, in order."""
    out = []
    for _, line in text_lines(path):
        m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
        if m:
            out.append(m.group(1))
    return out


def anchors(path):
    """GitHub's anchors of the page's headings."""
    seen, out = {}, set()
    for h in headings(path):
        a = re.sub(r'[^\w\- ]', '', h.lower()).replace(' ', '-')
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else '%s-%d' % (a, n))
    return out


def plain(heading):
    """A heading as prose quotes it: no markup, one space between words."""
    return ' '.join(heading.replace('`', '').split()).lower()


def main():
    root = sys.argv[1]
    doc = os.path.join(root, 'share', 'doc')
    files = sorted(glob.glob(os.path.join(doc, '*.md')))
    files += [os.path.join(root, 'README'), os.path.join(doc, 'alerts.yml')]
    bad = []
    for f in files:
        name = os.path.relpath(f, root)
        lines = list(text_lines(f))
        refs = []
        for i, line in lines:
            for m in re.finditer(r'\[[^\]]*\]\(([^)\s]+)\)', line):
                if not re.match(r'^[a-z]+:', m.group(1)):
                    refs.append((i, m.group(1), os.path.dirname(f)))
            m = re.search(r'runbook_url: "https?://[^/]+/share/doc/([^"]+)"',
                          line)
            if m:
                refs.append((i, m.group(1), doc))
        for i, target, base in refs:
            page, _, anchor = target.partition('#')
            p = os.path.normpath(os.path.join(base, page)) if page else f
            if not os.path.isfile(p):
                bad.append('%s:%d: %s: no such page' % (name, i, target))
            elif anchor and anchor not in anchors(p):
                bad.append('%s:%d: %s: no heading #%s in %s' % (
                    name, i, target, anchor, os.path.relpath(p, root)))
        # Prose: page.md, "Heading" (the line break folded to a space).
        text = ''
        starts = []
        for i, line in lines:
            starts.append((len(text), i))
            text += line + ' '
        for m in re.finditer(r'\b([a-z]+\.md)\)?,?\s+"([^"]+)"', text):
            i = max(n for pos, n in starts if pos <= m.start())
            p = os.path.join(doc, m.group(1))
            quote = plain(m.group(2))
            if not os.path.isfile(p):
                bad.append('%s:%d: %s: no such page' % (name, i, m.group(1)))
            elif not any(plain(h).startswith(quote) for h in headings(p)):
                bad.append('%s:%d: %s, "%s": no such heading' % (
                    name, i, m.group(1), m.group(2)))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
