// Zapomni console: live job progress over server-sent events. No inline script anywhere (the CSP forbids it).
"use strict";

function liveJobs() {
  const box = document.getElementById("jobs");
  const live = document.getElementById("live");
  if (!box || !window.EventSource) return;
  const source = new EventSource(box.dataset.events);
  const refresh = () => htmx.ajax("GET", box.dataset.refresh, { target: "#jobs", swap: "innerHTML" });
  source.addEventListener("open", () => { live.textContent = "live"; });
  source.addEventListener("error", () => { live.textContent = "reconnecting…"; });
  source.addEventListener("signed-out", () => { source.close(); window.location.assign("/login"); });
  source.addEventListener("jobs", (event) => {
    let stale = false;
    for (const job of JSON.parse(event.data)) {
      const row = box.querySelector(`tr[data-job-id="${CSS.escape(job.job_id)}"]`);
      if (!row || row.dataset.state !== job.state) { stale = true; continue; }
      const bar = row.querySelector("progress");
      bar.max = job.total || 1;
      bar.value = job.total ? job.done : 0;
      row.querySelector(".count").textContent =
        `${job.done}${job.total === null ? "" : "/" + job.total} ${job.unit}`;
      const message = row.querySelector(".message");
      if (message && job.message) message.textContent = job.message;
    }
    if (stale) refresh();  // a new job, or one that changed state: the server renders the rows again
  });
  window.addEventListener("pagehide", () => source.close());
}

document.addEventListener("DOMContentLoaded", liveJobs);
