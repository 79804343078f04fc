"""The small profile's way to answer: one program per question, repaired when it fails, its output the answer.

Measured on the embedded 1.5B model, a short pandas program is right far more often than a choice
of fixed tools and their arguments, and its printed result is a better answer than the model's
retelling of it. So, for each question:

1. The files the question is about are described (:mod:`deerflow_nb.tools.data_preview`: columns,
   kinds, values) and the description goes before the question, in the request only.
2. The model writes a program (``python`` tool; a model that supports it gets the lines loading the
   files as the program's start, ``code_prefix``). Known names it forgot to import are imported
   (:mod:`deerflow_nb.agent.program_fixes`).
3. The program runs in the sandbox. When it fails, prints nothing, prints a whole table, prints
   ``nan`` or does not write a file the user asked for, the model gets the reason and writes it
   again, up to ``max_programs`` programs in all; then the run ends with :class:`~deerflow_nb.errors.AnswerError`.
4. A program that ran well *is* the answer: its output, formatted
   (:func:`~deerflow_nb.agent.answer_format.format_answer`), becomes the final message without
   another model call, so every number in it comes from executed code.

A message that is only small talk ("thanks!") and names no data gets a plain reply; the answer
checks (:mod:`.answer_check`) still hold it to the numbers of the run.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from deerflow_nb.agent.answer_agreement import agree, confirmed, covers, same_tables, states_values
from deerflow_nb.agent.answer_format import format_answer
from deerflow_nb.agent.answer_report import report_note, report_paths, report_program, report_text
from deerflow_nb.agent.middlewares._base import context_of, last_ai
from deerflow_nb.agent.middlewares.answer_check import PROGRAM_ANSWER
from deerflow_nb.agent.program_checks import misread, output_problem
from deerflow_nb.agent.program_fixes import (
    add_missing_imports,
    change_before_ratio,
    group_label_arithmetic,
    group_products,
    list_grouped_columns,
    name_series,
    round_printed_ints,
)
from deerflow_nb.agent.program_misreads import (
    count_rows,
    fix_bins,
    fix_precedence,
    fix_ttest_variance,
    keep_missing,
    keep_needed_rows,
)
from deerflow_nb.agent.program_questions import (
    CLARIFICATION_TOOL,
    correlation_note,
    file_choice,
    is_answer,
    turn_question,
    with_data,
    years_note,
)
from deerflow_nb.agent.question_parts import QuestionPart, question_parts
from deerflow_nb.context import SAMPLING_SEED_KEY
from deerflow_nb.errors import AnswerError
from deerflow_nb.tools.data_join import with_join
from deerflow_nb.tools.data_preview import DataPreview, data_files, preview_files, render_preview
from deerflow_nb.tools.present_files import OUTPUTS_DIR
from deerflow_nb.tools.python_tool import PROGRAM_KEY, SCRATCH_FLAG, TABLE_HEAD

__all__ = ["CHECK_TEMPERATURE", "CODE_TOOL", "REPAIR_TEMPERATURES", "ProgramAnswerMiddleware", "is_internal",
           "requested_outputs",
           "user_turn"]

CODE_TOOL = "python"
#: Sampling temperature of the second, third, ... program of a question (the first is greedy). Measured:
#: at temperature 0 the embedded model answered an error by writing the same program again, every time.
REPAIR_TEMPERATURES = (0.5, 0.8)
#: Sampling temperature of a check: a program written again, without seeing the first, must reach its answer.
CHECK_TEMPERATURE = 0.7
_PREVIEW_KEY = "deerflow.data_preview"
_REQUESTED = re.compile(re.escape(OUTPUTS_DIR) + r"/[\w.\-/]+\.[A-Za-z0-9]{1,5}\b")
_SMALL_TALK = re.compile(r"^\W*(?:hi|hello|hey|thanks|thank you|thx|ok|okay|great|cool|nice|bye|good (?:morning|"
                         r"afternoon|evening)|who are you|what can you do)\b", re.IGNORECASE)


def is_internal(message: BaseMessage) -> bool:
    """Whether ``message`` is a hidden message the runtime added (a hint, a recovery prompt)."""
    return isinstance(message, HumanMessage) and bool(message.additional_kwargs.get("deerflow_internal"))


def user_turn(messages: Sequence[BaseMessage]) -> tuple[HumanMessage | None, list[BaseMessage]]:
    """The user's latest message and what followed it (hidden runtime messages are not the user's)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and not is_internal(message):
            return message, list(messages[index + 1:])
    return None, list(messages)


def requested_outputs(text: str) -> list[str]:
    """Files under the outputs folder that ``text`` asks for."""
    return list(dict.fromkeys(m.group(0).rstrip(".") for m in _REQUESTED.finditer(text)))


def _programs(after: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The runs of this turn's programs, oldest first (from the ``python`` tool messages)."""
    return [m.additional_kwargs.get(PROGRAM_KEY) or {} for m in after
            if isinstance(m, ToolMessage) and m.name == CODE_TOOL]


def _hint(text: str) -> HumanMessage:
    return HumanMessage(content=text, additional_kwargs={"deerflow_internal": True, "hide_from_ui": True})


class ProgramAnswerMiddleware(AgentMiddleware):
    """Drives the small profile's program-per-question loop (see the module docstring)."""

    def __init__(self, *, max_programs: int = 3, check_programs: int = 2, split_parts: bool = True) -> None:
        super().__init__()
        self.max_programs = max_programs
        self.check_programs = check_programs
        self.split_parts = split_parts

    # -- what to do next ---------------------------------------------------------------------------

    def problem(self, run: dict[str, Any], requested: Sequence[str], written: Sequence[str],
                preview: DataPreview | None = None, asked: str = "",
                reports: Sequence[str] = ()) -> tuple[str, str] | None:
        """``(stop_reason, hint)`` when a program's run does not answer the question (:func:`output_problem`)."""
        return output_problem(run, requested, written, preview, asked, reports)

    def _step(self, request: ModelRequest) -> tuple[str, Any, int | None]:
        """The next step of the question's loop, and the part of the question it is for.

        ``("answer", AIMessage)``, ``("fail", AnswerError)``, ``("model", hint)`` (write or repair a program)
        or ``("check", None)`` (write an independent program to check the answer); the third item is the
        index of the part (:func:`~deerflow_nb.agent.question_parts.question_parts`) the step is for, or
        ``None`` for a question asked as one. The parts are answered in turn, each like a question of its own;
        their answers, put together, are the answer (and the reports' content).
        """
        human, after = user_turn(request.messages)
        run_id = context_of(request).run_id
        last = next((m for m in reversed(after) if not is_internal(m)), None)  # hints (loop warnings) aside
        reporting = _flagged_calls(after, _REPORT_FLAG)
        if isinstance(last, ToolMessage) and last.tool_call_id in reporting:  # the reports are written
            kind, value = _reported(last, reporting[last.tool_call_id], run_id)
            return kind, value, None
        asked = _asked(request)
        parts = self._parts(request, asked)
        if not parts:
            kind, value = self._question_step(request, after, asked)
            return kind, value, None
        texts: list[str] = []
        written: list[str] = []
        for index, part in enumerate(parts):
            mine = _part_messages(after, index)
            kind, value = self._question_step(request, mine, part.question, compose=True)
            if kind != "answer" or value.tool_calls:  # under way (an adopted check's program runs again, too)
                if kind == "fail":
                    value = _part_failure(value, index, parts, texts, run_id)
                elif kind == "answer":
                    value = _in_part(value, index)
                return kind, value, index
            text, files = value.additional_kwargs[_PART_ANSWER]
            texts.append(_labelled(text, part.text))
            written += [path for path in files if path not in written]
        reports = report_paths(requested_outputs(asked))
        return "answer", self._deliver(_lines(texts), written, asked, reports), None

    def _parts(self, request: ModelRequest, asked: str) -> list[QuestionPart]:
        """The parts of the turn's question, when it asks several things at once (else ``[]``)."""
        human, _ = user_turn(request.messages)
        if human is None or is_answer(human) or not self.split_parts:
            return []
        return question_parts(asked)

    def _question_step(self, request: ModelRequest, after: list[BaseMessage], asked: str,
                       compose: bool = False) -> tuple[str, Any]:
        """The next step for one question (or one part, ``asked``) from the programs in ``after``.

        With ``compose``, an answer is an :class:`AIMessage` holding the part's text and files (no reports).
        """
        run_id = context_of(request).run_id
        last = next((m for m in reversed(after) if not is_internal(m)), None)  # hints (loop warnings) aside
        if not isinstance(last, ToolMessage) or last.name != CODE_TOOL:
            return "model", None
        outputs = requested_outputs(asked)
        reports = report_paths(outputs)
        adopting = _flagged_calls(after, _ADOPT_FLAG)
        if last.tool_call_id in adopting:  # a check's program, run again to keep its files: the answer
            return self._adopted(last, asked, reports, run_id, compose)
        checks_ids = set(_flagged_calls(after, _CHECK_FLAG))
        reporting = _flagged_calls(after, _REPORT_FLAG)
        codes = _call_codes(after)
        entries = [({**(m.additional_kwargs.get(PROGRAM_KEY) or {}), "code": codes.get(m.tool_call_id, "")},
                    m.tool_call_id in checks_ids) for m in after if isinstance(m, ToolMessage)
                   and m.name == CODE_TOOL and m.tool_call_id not in reporting]
        main = [run for run, check in entries if not check]
        checks = [run for run, check in entries if check]
        requested = [path for path in outputs if path not in reports]  # the files the programs must write
        written = [path for run, _ in entries for path in run.get("written", [])]
        cached = context_of(request).extra.get(_PREVIEW_KEY)
        preview = cached if isinstance(cached, DataPreview) else None
        if not entries[-1][1]:  # the question's own program (or its repair)
            problem = self.problem(main[-1], requested, written, preview, asked, reports)
            if problem is None and len(main) < self.max_programs and not any(  # one such hint a question
                    self.problem(run, requested, written, preview, asked, reports) is None
                    and misread(run, asked, preview) for run in main[:-1]):  # (given after a program with no problem)
                hint = misread(main[-1], asked, preview)
                if hint:
                    return "model", hint
            if problem is None:
                return ("check", None) if self.check_programs else \
                    ("answer", self._answer(main[-1], asked, reports, compose))
            reason, hint = problem
            if len(main) < self.max_programs:
                return "model", hint
            final = main[-1]
            detail = str(final.get("stderr") or "").strip().splitlines()[-1:] if final.get("exit_code") else []
            cause = (f"could not compute an answer: {len(main)} programs were tried and the last one "
                     f"{_describe(reason, requested, written, hint)}" + (f" ({detail[0][:200]})" if detail else ""))
            return "fail", AnswerError(cause, run_id=run_id, stop_reason=reason, cause=cause)
        # a check: an independent program must reach the same answer
        answer = main[-1]
        usable = [run for run in checks if self.problem(run, requested, run.get("written") or [], preview, asked,
                                                        reports) is None
                  and misread(run, asked, preview) is None]  # a check that misreads the question confirms nothing
        runs = [answer, *usable]
        stdout = [str(run.get("stdout") or "") for run in runs]

        def same(i: int, j: int) -> bool:
            """Whether ``j`` states what ``i`` does where they overlap (and ``i`` answers no fewer parts)."""
            return (agree(stdout[i], stdout[j], asked) and same_tables(runs[i], runs[j], asked, TABLE_HEAD)
                    and covers(stdout[i], stdout[j], asked))

        def full(i: int, j: int) -> bool:
            """Whether ``j`` confirms ``i``: all of it for one part of a question, else where they overlap.

            A part (``compose``) is one or two values: ``j`` must state every value ``i`` does. A question asked
            whole may print more than its checks (a report's table beside the asked total).
            """
            return same(i, j) and (not compose or covers(stdout[j], stdout[i], asked))

        for i, j in ((0, k) for k in range(1, len(stdout))):
            if full(i, j):  # the same values: the one written in the asked template, if only the check is
                chosen = runs[j] if _fits_template(stdout[j], asked) and not _fits_template(stdout[i], asked) \
                    else answer
                return "answer", self._answer(chosen, asked, reports, compose)
        partial = [stdout[k] for k in range(1, len(stdout)) if same(0, k)]
        if len(partial) >= 2 and confirmed(stdout[0], partial, asked):  # each part confirmed by one of them
            return "answer", self._answer(answer, asked, reports, compose)
        if len(usable) >= 2:  # two checks outvote the first answer
            for i, j in ((1, 2), (2, 1)):
                # (agreeing on fewer parts than the first program answered is no answer: a part is dropped)
                if full(i, j) and covers(stdout[i], stdout[0], asked):  # a check's files were put back: its
                    # program runs again to write them
                    return "answer", (_adopt(runs[i]) if runs[i].get("written") else
                                      self._answer(runs[i], asked, reports, compose))
        if len(checks) < self.check_programs:
            return "check", None
        if not usable:
            # a check that ran but printed less than asked (or more) still states values: they must not
            # contradict the answer; checks that crashed contradict nothing
            # (both must state values: an answer that only saved files, or a check that only names them, says
            # nothing to contradict, and a check's table with a problem is not comparable)
            ran = [run for run in checks if run.get("exit_code") in (0, None) and states_values(run.get("stdout"))
                   and misread(run, asked, preview) is None]
            unconfirmed = not ran or not states_values(stdout[0]) or any(
                agree(stdout[0], str(run.get("stdout")), asked) for run in ran)
            misreading = misread(answer, asked, preview)
            if unconfirmed and not misreading:
                return "answer", self._answer(answer, asked, reports, compose)
            if unconfirmed:  # no check confirms it, and its program still shows the misreading it was told of
                cause = ("could not confirm an answer: no independent program confirmed it, and its program "
                         f"still reads the question as it was told not to ({_one_line(misreading or '', 160)})")
                return "fail", AnswerError(cause, run_id=run_id, stop_reason="ungrounded_answer", cause=cause)
            stdout += [str(run.get("stdout")) for run in ran]
        cause = ("could not confirm an answer: independent programs computed different results ("
                 + " | ".join(_one_line(text) for text in stdout) + ")")
        tables = sorted({path for run in runs for path in run.get("lines") or {}})
        if tables and not all(same_tables(runs[0], run, asked, TABLE_HEAD) for run in runs[1:]):
            cause += "; wrote different tables (" + "; ".join(
                f"{path}: " + " | ".join(str((run.get("lines") or {}).get(path, "-")) for run in runs)
                + " lines" for path in tables) + ")"
        return "fail", AnswerError(cause, run_id=run_id, stop_reason="ungrounded_answer", cause=cause)

    def _answer(self, run: dict[str, Any], asked: str, reports: Sequence[str] = (),
                compose: bool = False) -> AIMessage:
        """The final message: what ``run`` printed, formatted (as precise as ``asked`` wants it).

        With ``compose`` (one part of a question), a message holding the part's text and files instead.
        """
        text = format_answer(str(run.get("stdout") or ""), asked)
        if compose:
            return AIMessage(content="", additional_kwargs={_PART_ANSWER: (text, list(run.get("written") or []))})
        return self._deliver(text, list(run.get("written") or []), asked, reports)

    @staticmethod
    def _deliver(text: str, written: Sequence[str], asked: str, reports: Sequence[str] = ()) -> AIMessage:
        """The final message for the answer ``text`` and the files written for it.

        With ``reports`` asked for, a call writing them from that answer (:mod:`~deerflow_nb.agent.answer_report`)
        comes first; the answer follows once they are written.
        """
        saved = [p for p in [*written, *reports] if p not in text]
        answer = (text + "\n\n" if text else "") + "Saved: " + ", ".join(f"`{p}`" for p in saved) if saved else text
        if reports:
            sources = data_files(asked, [])
            code = report_program({path: report_text(path, text, sources) for path in reports})
            call = {"name": CODE_TOOL, "args": {"code": code}, "id": f"call_{uuid.uuid4().hex[:24]}",
                    "type": "tool_call"}
            return AIMessage(content="", tool_calls=[call], id=f"lc_run--{uuid.uuid4()}",
                             additional_kwargs={_REPORT_FLAG: answer})
        return _final(answer)

    def _adopted(self, result: ToolMessage, asked: str, reports: Sequence[str], run_id: str | None,
                 compose: bool = False) -> tuple[str, Any]:
        """The step after a check's program ran again for its files: its answer, or an honest failure."""
        run = result.additional_kwargs.get(PROGRAM_KEY) or {}
        if run.get("exit_code") in (0, None) and result.status != "error":
            return "answer", self._answer(run, asked, reports, compose)
        detail = (str(run.get("stderr") or result.text).strip().splitlines() or [""])[-1][:200]
        cause = f"could not write the confirmed answer's files: {detail}"
        return "fail", AnswerError(cause, run_id=run_id, stop_reason="undelivered_outputs", cause=cause)

    # -- the request ---------------------------------------------------------------------------------

    def _may_ask(self, request: ModelRequest, step: tuple[str, Any, int | None]) -> str | None:
        """The question, when the loop may ask about it before the first program (no I/O)."""
        human, after = user_turn(request.messages)
        if step[:2] != ("model", None) or human is None or is_answer(human) or _programs(after) or not any(
                getattr(t, "name", None) == CLARIFICATION_TOOL for t in request.tools):
            return None  # under way, an answer already, or a run that may not ask (non-interactive)
        asked = turn_question(request, human)
        return asked if self._wants_code(asked) else None

    def _ask(self, request: ModelRequest, asked: str) -> AIMessage | None:
        """A question for the user before the first program (see :mod:`~deerflow_nb.agent.program_questions`)."""
        return file_choice(asked, self._uploads(request))

    def _uploads(self, request: ModelRequest) -> list[str]:
        ctx = context_of(request)
        return [str(e.get("path")) for e in (ctx.extra.get("uploads_scan") or self._scan(ctx))]

    def _preview(self, request: ModelRequest) -> DataPreview:
        """The data preview of this run (computed on its first model call, in a worker thread)."""
        ctx = context_of(request)
        cached = ctx.extra.get(_PREVIEW_KEY)
        if isinstance(cached, DataPreview):
            return cached
        human, _ = user_turn(request.messages)
        preview = DataPreview("", "", {})
        provider = ctx.sandbox_provider
        if human is not None and provider is not None and ctx.thread_id:
            uploads = self._uploads(request)
            paths = data_files(turn_question(request, human), uploads)
            if paths:
                sandbox = provider.acquire(ctx.thread_id, user_id=ctx.user_id)
                preview = with_join(render_preview(preview_files(sandbox, paths)), turn_question(request, human))
        ctx.extra[_PREVIEW_KEY] = preview
        return preview

    def _refuse_missing(self, request: ModelRequest, preview: DataPreview) -> None:
        """A question about files that do not exist fails at once, saying which (and what there is)."""
        if not preview.missing:
            return
        ctx = context_of(request)
        uploads = self._uploads(request)
        there = ", ".join(uploads) if uploads else "none"
        cause = (f"could not compute an answer: {', '.join(preview.missing)} does not exist "
                 f"(uploaded files: {there})")
        raise AnswerError(cause, run_id=ctx.run_id, stop_reason="unanswered_part", cause=cause)

    @staticmethod
    def _scan(ctx: Any) -> list[dict[str, Any]]:
        from deerflow_nb.agent.middlewares.uploads import list_upload_entries

        if ctx.paths is None or not ctx.thread_id:
            return []
        return list_upload_entries(str(ctx.paths.user_data_dir(ctx.user_id, ctx.thread_id) / "uploads"))

    def _request(self, request: ModelRequest, preview: DataPreview, hint: str | None,
                 check: bool = False, fresh: bool = False, part: QuestionPart | None = None,
                 index: int | None = None) -> ModelRequest:
        """The model request for the next program: the first, a check, a repair with ``hint``, or ``fresh``.

        A ``fresh`` program (see :meth:`_repeats`) is asked like a check: the question as asked, none of this
        turn's programs in view, sampled with another seed. For ``part`` (number ``index``) of a question, the
        part is the question, and only that part's programs are in view.
        """
        human, after = user_turn(request.messages)
        request = request.override(tools=[t for t in request.tools if getattr(t, "name", None) != CLARIFICATION_TOOL])
        asked = part.question if part is not None else _asked(request)
        messages: list[Any] = list(request.messages)
        if index is not None:  # the other parts' programs are not this part's business
            mine = _part_messages(after, index)
            messages = [*messages[:len(messages) - len(after)], *mine]
            after = mine
        turn = after
        earlier = len(_programs(after))
        if check or fresh:  # an independent program: the question as asked, none of this turn's programs
            messages = messages[:len(messages) - len(after)]
            after = []
        reports = report_paths(requested_outputs(asked))
        if human is not None and (preview or reports or part is not None):
            note = " ".join(filter(None, (years_note(asked, preview), correlation_note(asked, preview),
                                          report_note(reports) if reports else "")))
            shown = human.model_copy(update={"content": asked}) if part is not None else human
            messages = [with_data(shown, preview, asked, note) if m is human else m for m in messages]
        if hint:
            messages.append(_hint(hint))
        repairing = bool(request.messages) and is_internal(request.messages[-1])  # an answer check's repair turn
        code = check or fresh or bool(hint) or repairing or bool(_programs(after)) or self._wants_code(asked)
        if not (code and any(getattr(t, "name", None) == CODE_TOOL for t in request.tools)):
            return request.override(messages=messages)
        settings = dict(request.model_settings)
        if getattr(request.model, "supports_code_prefix", False):
            if preview.prelude:
                settings["code_prefix"] = preview.prelude
            tries = len(_programs(after))
            if fresh:
                settings["temperature"] = CHECK_TEMPERATURE
                settings["seed"] = 200 + earlier
            elif check:  # sampled, so that it is written independently of the greedy first program
                done = len(_flagged_calls(turn, _CHECK_FLAG))
                settings["temperature"] = CHECK_TEMPERATURE
                settings["seed"] = 100 + done  # reproducible runs
            elif tries:  # greedy decoding writes the failed program again, word for word: sample the repair
                settings["temperature"] = REPAIR_TEMPERATURES[min(tries, len(REPAIR_TEMPERATURES)) - 1]
                settings["seed"] = tries
            elif isinstance(seed := context_of(request).extra.get(SAMPLING_SEED_KEY), int):  # Regenerate
                settings["temperature"] = CHECK_TEMPERATURE
                settings["seed"] = seed
        return request.override(messages=messages, model_settings=settings,
                                tool_choice={"type": "function", "function": {"name": CODE_TOOL}})

    @staticmethod
    def _repeats(request: ModelRequest, response: ModelResponse, index: int | None = None) -> bool:
        """Whether the program of ``response`` is one of this turn's programs word for word.

        Measured on the embedded model, a third of the repairs wrote the failed program again (sampled, with
        the error and a hint before it); running it again would cost a turn for the same result. Such a repair
        is written afresh instead, without the earlier programs in view.
        """
        message = last_ai(response)
        if message is None:
            return False
        new = [str((c.get("args") or {}).get("code", "")).strip() for c in message.tool_calls
               if c.get("name") == CODE_TOOL]
        if not new:
            return False
        _, after = user_turn(request.messages)
        if index is not None:
            after = _part_messages(after, index)
        codes = _call_codes(after)
        earlier = {code.strip() for call_id, code in codes.items() if call_id not in _flagged_calls(after, _CHECK_FLAG)}
        return new[0] in earlier

    @staticmethod
    def _wants_code(asked: str) -> bool:
        """Whether the user's words ask for work (anything but a few words of small talk)."""
        text = asked.strip()
        if not text:
            return False
        small_talk = bool(_SMALL_TALK.match(text)) and len(text.split()) <= 6 and not re.search(r"\d", text)
        return not small_talk

    def _finish(self, response: ModelResponse, asked: str, preview: DataPreview, check: bool = False,
                index: int | None = None) -> ModelResponse:
        """Fix a program before it runs; mark checks.

        Fixed: forgotten imports, the t-test ``asked`` names, rows dropped that ``asked`` needs (see
        :mod:`~deerflow_nb.agent.program_misreads`). The call then shows the program that really runs.
        """
        message = last_ai(response)
        if message is None or not message.tool_calls:
            return response
        calls = []
        for call in message.tool_calls:
            code = (call.get("args") or {}).get("code")
            if call.get("name") == CODE_TOOL and isinstance(code, str):
                code = change_before_ratio(group_products(group_label_arithmetic(list_grouped_columns(code))))
                code = round_printed_ints(fix_ttest_variance(add_missing_imports(name_series(code)), asked), asked)
                code = fix_bins(keep_needed_rows(code, asked, preview.columns), asked)
                code = keep_missing(code, asked, list(preview.columns) or ["df"])
                code = fix_precedence(code, list(preview.columns) or ["df"])
                code = count_rows(code, asked, sorted({c for cols in preview.gaps.values() for c in cols}))
                call = {**call, "args": {**call["args"], "code": code}}
            calls.append(call)
        kwargs = {**message.additional_kwargs, _CHECK_FLAG: True, SCRATCH_FLAG: True} if check \
            else message.additional_kwargs  # a check's files are compared, then the answer's put back
        if index is not None:
            kwargs = {**kwargs, _PART_FLAG: index}
        fixed = message.model_copy(update={"tool_calls": calls, "additional_kwargs": kwargs})
        return ModelResponse(result=[fixed if m is message else m for m in response.result],
                             structured_response=response.structured_response)

    # -- hooks ---------------------------------------------------------------------------------------

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelCallResult:
        """Answer from the last program, or ask the model for the next one."""
        step = self._step(request)
        kind, value, index = step
        if kind == "answer":
            return ModelResponse(result=[value])
        if kind == "fail":
            raise value
        if (asked := self._may_ask(request, step)) is not None and (ask := self._ask(request, asked)) is not None:
            return ModelResponse(result=[ask])
        preview = self._preview(request)
        self._refuse_missing(request, preview)
        part, question = self._part(request, index)
        check = kind == "check"
        result = self._finish(handler(self._request(request, preview, value, check, part=part, index=index)),
                              question, preview, check, index)
        if not check and self._repeats(request, result, index):
            result = self._finish(handler(self._request(request, preview, None, fresh=True, part=part, index=index)),
                                  question, preview, index=index)
        return result

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelCallResult:
        """Async twin of :meth:`wrap_model_call` (the preview runs in a worker thread)."""
        step = self._step(request)
        kind, value, index = step
        if kind == "answer":
            return ModelResponse(result=[value])
        if kind == "fail":
            raise value
        if (asked := self._may_ask(request, step)) is not None and (
                ask := await asyncio.to_thread(self._ask, request, asked)) is not None:
            return ModelResponse(result=[ask])
        ctx = context_of(request)
        cached = ctx.extra.get(_PREVIEW_KEY)
        preview = cached if isinstance(cached, DataPreview) else await asyncio.to_thread(self._preview, request)
        self._refuse_missing(request, preview)
        part, question = self._part(request, index)
        check = kind == "check"
        result = self._finish(await handler(self._request(request, preview, value, check, part=part, index=index)),
                              question, preview, check, index)
        if not check and self._repeats(request, result, index):
            result = self._finish(await handler(self._request(request, preview, None, fresh=True, part=part,
                                                              index=index)), question, preview, index=index)
        return result

    def _part(self, request: ModelRequest, index: int | None) -> tuple[QuestionPart | None, str]:
        """Part ``index`` of the turn's question (``None``: the question as one) and the question it asks."""
        asked = _asked(request)
        if index is None:
            return None, asked
        part = self._parts(request, asked)[index]
        return part, part.question


def _asked(request: ModelRequest) -> str:
    human, _ = user_turn(request.messages)
    return turn_question(request, human) if human is not None else ""


_CHECK_FLAG = "deerflow_check"
_PART_FLAG = "deerflow_part"  # which part of the question a program is for
_PART_ANSWER = "deerflow_part_answer"  # (never stored) a part's answer: its text and files
_REPORT_FLAG = "deerflow_report"
_ADOPT_FLAG = "deerflow_adopt"


def _adopt(run: dict[str, Any]) -> AIMessage:
    """A call running a check's program again, this time keeping its files (the checks outvoted the answer)."""
    call = {"name": CODE_TOOL, "args": {"code": str(run.get("code") or "")}, "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call], id=f"lc_run--{uuid.uuid4()}", additional_kwargs={_ADOPT_FLAG: True})


def _call_codes(after: Sequence[BaseMessage]) -> dict[str, str]:
    """The program of each of this turn's ``python`` calls, by call id."""
    return {str(call.get("id")): str((call.get("args") or {}).get("code") or "") for m in after
            if isinstance(m, AIMessage) for call in m.tool_calls if call.get("name") == CODE_TOOL}


def _flagged_calls(after: Sequence[BaseMessage], flag: str) -> dict[str, Any]:
    """Tool calls of this turn made by a message marked with ``flag`` (a check, a report): call id → the mark."""
    return {str(call.get("id")): m.additional_kwargs[flag] for m in after
            if isinstance(m, AIMessage) and m.additional_kwargs.get(flag) for call in m.tool_calls}


def _lines(texts: Sequence[str]) -> str:
    """The parts' answers as one Markdown answer: a line break after each (a blank line after a code block)."""
    out = ""
    for text in texts:
        if out:
            out += "\n\n" if out.endswith("```") else ("\n" if out.endswith("  ") else "  \n")
        out += text.rstrip("\n")
    return out


def _labelled(text: str, asked: str) -> str:
    """A part's answer, after the part's own words when it has no label of its own ("Office", "54")."""
    bare = "\n" not in text.strip() and not re.search(r"[:=]", text) and len(text.split()) <= 3
    return f"{asked}: {text.strip()}" if bare else text


def _part_messages(after: Sequence[BaseMessage], index: int) -> list[BaseMessage]:
    """The programs of this turn (calls and results) for part ``index`` of the question."""
    calls = {str(call.get("id")) for m in after if isinstance(m, AIMessage)
             and m.additional_kwargs.get(_PART_FLAG) == index for call in m.tool_calls}
    return [m for m in after if (isinstance(m, AIMessage) and m.additional_kwargs.get(_PART_FLAG) == index)
            or (isinstance(m, ToolMessage) and m.tool_call_id in calls)]


def _in_part(message: AIMessage, index: int) -> AIMessage:
    """``message`` marked as a step of part ``index``."""
    return message.model_copy(update={"additional_kwargs": {**message.additional_kwargs, _PART_FLAG: index}})


def _part_failure(error: AnswerError, index: int, parts: Sequence[QuestionPart], answered: Sequence[str],
                  run_id: str | None) -> AnswerError:
    """``error`` of one part, for the whole question: which part could not be answered, and what was."""
    cause = f"part {index + 1} of {len(parts)} ({parts[index].text}): {error.cause}"
    if answered:
        cause += " — answered before it: " + "; ".join(_one_line(text, 80) for text in answered)
    return AnswerError(cause, run_id=run_id, stop_reason=error.stop_reason, cause=cause)


def _final(text: str) -> AIMessage:
    """The run's final message: an answer computed by programs (the answer checks know it by its mark)."""
    return AIMessage(content=text, id=f"lc_run--{uuid.uuid4()}", additional_kwargs={"deerflow_answer": PROGRAM_ANSWER})


def _reported(result: ToolMessage, answer: str, run_id: str | None) -> tuple[str, Any]:
    """The step after the reports were written: the answer, or an honest failure when writing them failed."""
    run = result.additional_kwargs.get(PROGRAM_KEY) or {}
    if run.get("exit_code") in (0, None) and result.status != "error":
        return "answer", _final(answer)
    detail = (str(run.get("stderr") or result.text).strip().splitlines() or [""])[-1][:200]
    cause = f"could not write the report: {detail}"
    return "fail", AnswerError(cause, run_id=run_id, stop_reason="undelivered_outputs", cause=cause)


_TEMPLATE = re.compile(r"(?<!\w)([A-Za-z_]\w{0,30})\s*=\s*<[^<>\n]{1,40}>")


def _fits_template(stdout: str, asked: str) -> bool:
    """Whether ``stdout`` states a value in each ``key=<value>`` template the question gives (none: ``False``)."""
    keys = [m.group(1).strip() for m in _TEMPLATE.finditer(asked)]
    return bool(keys) and all(re.search(rf"(?<!\w){re.escape(key)}\s*=\s*<?-?\d", stdout, re.IGNORECASE)
                              for key in keys)


def _one_line(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _describe(reason: str, requested: Sequence[str], written: Sequence[str], hint: str = "") -> str:
    if reason == "undelivered_outputs":
        missing = [p for p in requested if p not in written]
        if missing:
            return "did not write " + ", ".join(missing)
        return "wrote a file that is not what was asked (" + re.split(r"\.(?:\s|$)", hint, maxsplit=1)[0] + ")"
    if reason == "empty_answer":
        return "printed nothing"
    return "did not produce a usable result"
