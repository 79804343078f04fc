// The standalone human-input card's view (the chat widget renders the same card inline).

function render({ model, el }) {
  dfStyle(el);
  const root = dfEl("div", { class: "dfw-root dfw-card-root" });
  el.append(root);
  const draw = () => {
    root.replaceChildren(dfRequestCard(model.get("request") || {}, {
      answered: model.get("answered"),
      answerText: model.get("answer_text"),
      error: model.get("error"),
      disabled: model.get("busy"),
      onSubmit: (answer) => model.send({ kind: "respond", answer }),
    }));
  };
  for (const name of ["request", "answered", "answer_text", "error", "busy"]) model.on(`change:${name}`, draw);
  draw();
}

export default { render };
