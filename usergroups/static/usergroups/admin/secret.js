/* Reveal and copy buttons of secrets in the django-usergroups admin (no dependencies). */
"use strict";
(function () {
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      const area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      try {
        if (document.execCommand("copy")) {
          resolve();
        } else {
          reject(new Error("copy refused"));
        }
      } catch (error) {
        reject(error);
      } finally {
        area.remove();
      }
    });
  }

  function say(box, text) {
    const status = box.querySelector(".ug-copy-status");
    if (!status) {
      return;
    }
    status.textContent = text;
    window.clearTimeout(status.ugTimer);
    status.ugTimer = window.setTimeout(function () {
      status.textContent = "";
    }, 4000);
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-ug-reveal], [data-ug-copy]");
    if (!button) {
      return;
    }
    const box = button.closest("[data-ug-secret]");
    const value = box.querySelector("[data-ug-value]");
    if (button.hasAttribute("data-ug-reveal")) {
      const show = value.hidden;
      value.hidden = !show;
      box.querySelector("[data-ug-mask]").hidden = show;
      button.textContent = show ? "Hide" : "Reveal";
      button.setAttribute("aria-expanded", String(show));
      return;
    }
    copyText(value.textContent.trim()).then(
      function () {
        say(box, "Copied to the clipboard.");
      },
      function () {
        say(box, "Could not copy: select the text and copy it by hand.");
      }
    );
  });
})();
