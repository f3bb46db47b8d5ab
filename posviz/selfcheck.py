r"""Self-check questions that answer in the page: no kernel, no network, keyboard first.

A chapter builds its questions in a (hidden) code cell, with every number computed by posviz, and
displays them with :func:`self_check`. The output is one self-contained HTML block (markup, a
little CSS and an inline script, nothing loaded from anywhere), so the same cell works in the
built book, in JupyterLab and in Colab:

* :class:`MultipleChoice`: radio buttons, the wrong options shuffled per question (seeded, so
  rebuilds match) and the right one at a different place in successive questions; each option
  carries its own explanation, shown when that option is checked;
* :class:`Numeric`: a number field checked against the answer with a tolerance
  (:math:`|x - a| \le \max(\text{abs\_tol}, \text{rel\_tol}\cdot|a|)`); a right answer shows
  the value and the explanation, a wrong one invites another try, and "Show answer" reveals both.

Explanations may link to the equation or figure they come from with Markdown-style links,
``[the ALiBi score](#equation-alibi-score)``; everything else is escaped. Each question is a
``<fieldset class="self-check">``; feedback goes to a polite live region so that screen readers
announce it.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .book import _nested_messages
from .i18n import N_, UNGROUPED, _normalise, _translated_record, get_language, message_of, translate, ungrouped

__all__ = ["MIME", "Choice", "MultipleChoice", "Numeric", "SelfCheck", "self_check"]

MIME = "application/vnd.posviz.selfcheck+json"
"""The block's data, beside its HTML: the book renders it in the edition's language
(``posviz.sphinxext``); JupyterLab and Colab show the HTML."""

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def _rich(text: str) -> str:
    """Escape ``text``, then turn ``[label](#anchor)`` links and ``$...$``-free backticks into HTML."""
    out, last = [], 0
    for m in _LINK.finditer(text):
        out.append(html.escape(text[last : m.start()]))
        target = m.group(2)
        if not (target.startswith("#") or target.startswith("./") or target.endswith(".html") or ".html#" in target):
            raise ValueError(f"explanation links must stay inside the book, got {target!r}")
        out.append(f'<a href="{html.escape(target)}">{html.escape(m.group(1))}</a>')
        last = m.end()
    out.append(html.escape(text[last:]))
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", "".join(out))


@dataclass(frozen=True)
class Choice:
    """One option of a :class:`MultipleChoice`: its text, whether it is right, and why."""

    text: str
    why: str
    correct: bool = False


@dataclass(frozen=True)
class MultipleChoice:
    """A question with one right option among several; every option explains itself."""

    prompt: str
    choices: Sequence[Choice]

    def __post_init__(self) -> None:
        if len(self.choices) < 2:
            raise ValueError(f"a multiple-choice question needs at least 2 choices, got {len(self.choices)}")
        right = sum(c.correct for c in self.choices)
        if right != 1:
            raise ValueError(f"exactly one choice must be correct, got {right}: {self.prompt!r}")
        for c in self.choices:
            if not isinstance(c, Choice) or not c.why.strip():
                raise ValueError(f"every choice needs an explanation (why=...): {self.prompt!r}")


@dataclass(frozen=True)
class Numeric:
    """A question whose answer is a number, accepted within a tolerance.

    Attributes:
        prompt: the question.
        answer: the value, computed by posviz when the book is built.
        why: how to get it, shown with the value once the answer is right or when the reader
            asks for the answer ("Show answer"); a wrong answer only says so and invites another try.
        abs_tol, rel_tol: accepted when ``|x - answer| <= max(abs_tol, rel_tol * |answer|)``.
        unit: shown after the field (e.g. "tokens").
        digits: significant digits used when the value is shown.
    """

    prompt: str
    answer: float
    why: str
    abs_tol: float = 0.0
    rel_tol: float = 0.01
    unit: str = ""
    digits: int = 4

    def __post_init__(self) -> None:
        if not math.isfinite(float(self.answer)):
            raise ValueError(f"answer must be a finite number, got {self.answer!r}")
        if self.abs_tol < 0 or self.rel_tol < 0 or (self.abs_tol == 0 and self.rel_tol == 0 and self.answer != 0):
            raise ValueError("give a tolerance: abs_tol >= 0 and rel_tol >= 0, not both 0")

    @property
    def tolerance(self) -> float:
        return max(self.abs_tol, self.rel_tol * abs(float(self.answer)))

    def accepts(self, value: float) -> bool:
        """Whether ``value`` counts as right (the page's script applies the same rule)."""
        return abs(float(value) - float(self.answer)) <= self.tolerance

    def shown(self) -> str:
        value = float(self.answer)
        if (value == int(value) or abs(value) >= 10**self.digits) and abs(value) < 1e15:
            return f"{round(value):,}"  # 60,611 rather than 6.061e+04
        return f"{value:.{self.digits}g}"


Question = MultipleChoice | Numeric

_CSS = """
.self-check{border:1px solid var(--pst-color-border,#ccc);border-radius:6px;padding:.6em 1em;margin:1em 0}
.self-check legend{font-weight:600;font-size:1em;line-height:1.4;padding:0 .3em;float:none;width:auto}
.self-check label{display:block;margin:.25em 0;cursor:pointer}
.self-check .sc-row{display:flex;flex-wrap:wrap;gap:.5em;align-items:center;margin-top:.4em}
.self-check input[type=text]{width:9em;padding:.2em .4em;font:inherit}
.self-check button{font:inherit;padding:.2em .9em;border-radius:4px;border:1px solid currentColor;
 background:transparent;color:inherit;cursor:pointer}
.self-check button:focus-visible,.self-check input:focus-visible{outline:3px solid #0969da;outline-offset:2px}
.self-check .sc-feedback{margin-top:.4em}
.self-check .sc-feedback.correct{color:#116329}
.self-check .sc-feedback.incorrect{color:#a40e26}
.self-check .sc-row button.sc-show{border-style:dashed}
html[data-theme=dark] .self-check .sc-feedback.correct{color:#56d364}
html[data-theme=dark] .self-check a{color:#9ecbff}
html[data-theme=dark] .self-check .sc-feedback.incorrect{color:#ff7b72}
"""

# One function per block (the block's id), no globals beyond it: blocks work in any order, twice
# on a page, and when JupyterLab re-renders an output.
_JS = """
(function(){
var root=document.getElementById(%(id)s); if(!root||root.dataset.ready)return; root.dataset.ready="1";
root.querySelectorAll("fieldset.self-check").forEach(function(q){
 var out=q.querySelector(".sc-feedback"), btn=q.querySelector("button.sc-check");
 // sentences joined by a space, or by nothing after a full-width stop (Chinese: "正确。数值是 …")
 function cat(){return Array.prototype.reduce.call(arguments,function(a,b){
  return a+(/[\u3000-\u303f\uff00-\uffef]$/.test(a)?"":" ")+b;});}
 function say(ok,html){out.className="sc-feedback "+(ok?"correct":"incorrect");out.innerHTML=html;}
 btn.addEventListener("click",function(){
  if(q.dataset.kind==="choice"){
   var picked=q.querySelector("input[type=radio]:checked");
   if(!picked){say(false,%(pick)s);return;}
   var ok=picked.dataset.correct==="1";
   say(ok,cat(ok?%(right)s:%(wrong)s,picked.parentNode.querySelector("template").innerHTML));
  } else {
   var raw=q.querySelector("input[type=text]").value.trim().replace(/,/g,"").replace(/\\u2212/g,"-");
   var x=Number(raw);
   if(raw===""||!isFinite(x)){say(false,%(number)s);return;}
   var a=Number(q.dataset.answer), ok=Math.abs(x-a)<=Number(q.dataset.tol);
   if(ok){say(true,cat(%(right)s,%(value)s.replace("{v}",q.dataset.shown),q.querySelector("template").innerHTML));}
   else{say(false,cat(%(wrong)s,%(again)s));}
  }
 });
 var show=q.querySelector("button.sc-show");
 if(show){show.addEventListener("click",function(){
  out.className="sc-feedback shown";
  out.innerHTML=cat(%(value)s.replace("{v}",q.dataset.shown),q.querySelector("template").innerHTML);});}
 q.querySelectorAll("input").forEach(function(i){i.addEventListener("keydown",function(e){
  if(e.key==="Enter"){e.preventDefault();btn.click();}});});
});
})();
"""

_WORDS = {
    "title": N_("Check yourself"),
    "check": N_("Check"),
    "right": N_("Right."),
    "wrong": N_("Not quite."),
    "pick": N_("Pick an answer first."),
    "number": N_("Type a number (e.g. 0.25 or 1e-3)."),
    "value": N_("The value is {v}."),
    "again": N_("Try again, or show the answer."),
    "show": N_("Show answer"),
    "answer_label": N_("Your answer"),
}


@dataclass
class SelfCheck:
    """A block of questions; displays as HTML in the book, JupyterLab and Colab."""

    questions: Sequence[Question]
    title: str = _WORDS["title"]
    key: str = ""
    words: dict[str, str] = field(default_factory=lambda: dict(_WORDS))
    language: str | None = None  # the words' language (None: posviz.get_language()); Chinese: 60611

    def _id(self) -> str:
        digest = hashlib.sha256(json.dumps([self.key, self.title, [q.prompt for q in self.questions]]).encode())
        return "sc-" + digest.hexdigest()[:12]

    def _question(self, q: Question, qid: str, number: int, rank: int = 0) -> str:
        legend = f"<legend>{number}. {_rich(q.prompt)}</legend>"
        button = f'<button type="button" class="sc-check">{html.escape(self.words["check"])}</button>'
        feedback = '<div class="sc-feedback" role="status" aria-live="polite"></div>'
        if isinstance(q, MultipleChoice):
            # the wrong options shuffled (seeded by the question: a rebuild gives the same page), the
            # right one at place ``rank mod n`` for the rank-th multiple-choice question of the block:
            # never always first
            wrong = [i for i, c in enumerate(q.choices) if not c.correct]
            random.Random(hashlib.sha256(q.prompt.encode()).hexdigest()).shuffle(wrong)
            right = next(i for i, c in enumerate(q.choices) if c.correct)
            order = wrong[:]
            order.insert(rank % len(q.choices), right)
            options = "".join(
                f'<label><input type="radio" name="{qid}" value="{i}" data-correct="{int(q.choices[i].correct)}"> '
                f"{_rich(q.choices[i].text)}<template>{_rich(q.choices[i].why)}</template></label>"
                for i in order
            )
            return (
                f'<fieldset class="self-check" data-kind="choice" id="{qid}">{legend}{options}'
                f'<div class="sc-row">{button}</div>{feedback}</fieldset>'
            )
        unit = f"<span>{html.escape(q.unit)}</span>" if q.unit else ""
        return (
            f'<fieldset class="self-check" data-kind="numeric" id="{qid}" data-answer="{float(q.answer)!r}" '
            f'data-tol="{q.tolerance!r}" data-shown="{html.escape(self._shown(q))}">{legend}'
            f'<div class="sc-row"><label for="{qid}-in" style="display:inline">'
            f"{html.escape(self.words['answer_label'])}</label>"
            f'<input type="text" inputmode="decimal" autocomplete="off" id="{qid}-in">{unit}{button}'
            f'<button type="button" class="sc-show">{html.escape(self.words["show"])}</button></div>'
            f"<template>{_rich(q.why)}</template>{feedback}</fieldset>"
        )

    def _shown(self, q: Numeric) -> str:
        """The answer as the page shows it: without a thousands separator in Chinese (60611)."""
        return ungrouped(q.shown()) if (self.language or get_language()) in UNGROUPED else q.shown()

    def _strings(self) -> list[str]:
        out = [self.title]
        for q in self.questions:
            out.append(q.prompt)
            if isinstance(q, MultipleChoice):
                out += [x for c in q.choices for x in (c.text, c.why)]
            else:
                out += [q.why, q.unit]
        return out

    def to_json(self) -> dict[str, Any]:
        """The block as data, with the message behind each string (:func:`posviz.i18n.tr`)."""
        questions = []
        for q in self.questions:
            if isinstance(q, MultipleChoice):
                choices = [{"text": c.text, "why": c.why, "correct": c.correct} for c in q.choices]
                questions.append({"kind": "choice", "prompt": q.prompt, "choices": choices})
            else:
                questions.append(
                    {
                        "kind": "numeric",
                        "prompt": q.prompt,
                        "answer": float(q.answer),
                        "why": q.why,
                        "abs_tol": q.abs_tol,
                        "rel_tol": q.rel_tol,
                        "unit": q.unit,
                        "digits": q.digits,
                    }
                )
        messages: dict[str, list[Any]] = {}
        for text in self._strings():
            message = message_of(text) if text else None
            if message:
                messages[text] = message
                messages.update(_nested_messages(message))  # its fields that are phrases (a list)
        return {"title": self.title, "key": self.key, "questions": questions, "messages": messages}

    @classmethod
    def from_json(cls, data: dict[str, Any], language: str = "en") -> SelfCheck:
        """A block from :meth:`to_json`'s data, its strings and buttons in ``language``."""
        record = data.get("messages") or {}
        table = _translated_record(record, _normalise(language)) if record and language != "en" else {}

        def t(text: str) -> str:
            return table.get(text, text) if text else text

        questions: list[Question] = []
        for q in data["questions"]:
            if q["kind"] == "choice":
                choices = [Choice(t(c["text"]), t(c["why"]), c["correct"]) for c in q["choices"]]
                questions.append(MultipleChoice(t(q["prompt"]), choices))
            else:
                fields = {k: q[k] for k in ("answer", "abs_tol", "rel_tol", "digits")}
                questions.append(Numeric(t(q["prompt"]), why=t(q["why"]), unit=t(q["unit"]), **fields))
        words = {
            k: translate(v, language) if k != "value" else translate(v, language, v="{v}") for k, v in _WORDS.items()
        }
        title = data["title"]
        title = translate(title, language) if title == _WORDS["title"] else t(title)
        return cls(questions, title=title, key=data.get("key", ""), words=words, language=language)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/html": self._repr_html_(), MIME: self.to_json()}

    def _repr_html_(self) -> str:
        block = self._id()
        ranks = [sum(isinstance(p, MultipleChoice) for p in self.questions[:i]) for i in range(len(self.questions))]
        questions = "".join(
            self._question(q, f"{block}-q{i + 1}", i + 1, ranks[i]) for i, q in enumerate(self.questions)
        )
        js = _JS % {k: json.dumps(v) for k, v in {**self.words, "id": block}.items()}
        return (
            f'<section class="self-check-block" id="{block}" aria-label="{html.escape(self.title)}">'
            f"<style>{_CSS}</style><p><strong>{html.escape(self.title)}</strong></p>{questions}"
            f"<script>{js}</script></section>"
        )


def self_check(*questions: Question, title: str = _WORDS["title"], key: str = "") -> SelfCheck:
    """The chapter's self-check block: ``self_check(MultipleChoice(...), Numeric(...))``.

    Args:
        questions: 1 or more :class:`MultipleChoice` / :class:`Numeric`.
        title: the heading shown above the questions.
        key: distinguishes two blocks with the same questions on one page (ids are derived from
            the content, so a rebuild gives the same HTML).
    """
    if not questions:
        raise ValueError("self_check needs at least one question")
    for q in questions:
        if not isinstance(q, (MultipleChoice, Numeric)):
            raise TypeError(f"questions must be MultipleChoice or Numeric, got {type(q).__name__}")
    return SelfCheck(list(questions), title=title, key=key)
