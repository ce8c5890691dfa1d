// The driver pickers (the fines list's filter, a fine's correction): the drivers its text
// fits come as buttons under it (htmx, `fine_drivers`); a button puts its driver in the
// field, and in the fines list filters it (`data-picker-submits`). In a form that offers
// candidates first, typing or choosing a driver picks "another driver" (`choice=other`).
// Without JavaScript the field takes a name or an id as typed.
(function () {
  "use strict";

  function pickerOf(element) {
    var picker = element.closest(".picker");
    return picker && {
      input: picker.querySelector("[data-driver-picker]"),
      choices: picker.querySelector(".picker__choices"),
    };
  }

  function close(picker) {
    picker.choices.replaceChildren();
    picker.input.setAttribute("aria-expanded", "false");
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-driver-choice]");
    var picker = button && pickerOf(button);
    if (!picker) return;
    picker.input.value = button.dataset.driverChoice;
    close(picker);
    picker.input.focus();
    otherChosen(picker.input);
    if (picker.input.hasAttribute("data-picker-submits")) picker.input.form.requestSubmit();
  });

  function otherChosen(input) {
    var other = input.form && input.form.querySelector('input[name="choice"][value="other"]');
    if (other) other.checked = true;
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("[data-driver-picker]")) {
      otherChosen(event.target);
    }
  });

  document.addEventListener("keydown", function (event) {
    var picker = pickerOf(event.target);
    if (!picker) return;
    var buttons = Array.prototype.slice.call(picker.choices.querySelectorAll("button"));
    var at = buttons.indexOf(event.target);
    if (event.key === "Escape") {
      close(picker);
      picker.input.focus();
    } else if (event.key === "ArrowDown" && buttons.length) {
      event.preventDefault();
      buttons[Math.min(at + 1, buttons.length - 1)].focus();
    } else if (event.key === "ArrowUp" && at >= 0) {
      event.preventDefault();
      (at === 0 ? picker.input : buttons[at - 1]).focus();
    }
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    var picker = pickerOf(event.target);
    if (!picker || event.target !== picker.choices) return;
    var open = picker.choices.querySelector("button") !== null;
    picker.input.setAttribute("aria-expanded", open ? "true" : "false");
  });
})();
