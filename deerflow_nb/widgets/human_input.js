// The standalone human-input card's view (the chat widget renders the same card inline).

function render({ model, el }) {
  const root = dfEl("div", { class: "dfw-root dfw-card-root" });
  const notice = dfEl("div", { class: "dfw-notice", role: "status" });
  el.append(root);
  let kernel = null;
  // what the user has entered, kept while the card is redrawn (a new question starts a new draft)
  let draft = {};
  let draftFor = null;
  const draw = () => {
    const request = model.get("request") || {};
    const key = JSON.stringify(request);
    if (key !== draftFor) { draft = {}; draftFor = key; }
    root.replaceChildren(notice, dfRequestCard(request, {
      draft,
      answered: model.get("answered"),
      answerText: model.get("answer_text"),
      error: model.get("error"),
      closed: model.get("closed"),
      disabled: model.get("busy") || kernel === false,
      onSubmit: (answer) => model.send({ kind: "respond", answer }),
      onSkip: () => model.send({ kind: "skip" }),
    }));
  };
  const watch = dfKernelWatch(model, (alive) => {
    kernel = alive;
    notice.textContent = alive ? "" : "Not connected to a kernel: this card cannot be answered here.";
    draw();
  });
  for (const name of ["request", "answered", "answer_text", "error", "busy", "closed"]) model.on(`change:${name}`, draw);
  draw();
  return () => watch.stop();
}

export default { render };
