// Zapomni console: draws an entity's neighbourhood with Cytoscape.js; clicking a node adds its own
// neighbours, clicking an edge shows its predicate, method, strength and evidence. Names and evidence are
// set as text (textContent), never as HTML.
"use strict";

function edgeInfo(panel, data) {
  panel.replaceChildren();
  const title = document.createElement("h3");
  title.textContent = `${data.source} — ${data.predicate || data.type} → ${data.target}`;
  panel.append(title);
  const facts = document.createElement("dl");
  const rows = [["Type", data.type], ["Method", data.method], ["Strength", data.strength.toFixed(2)],
    ["Valid from", data.valid_from || "—"], ["Superseded", data.superseded ? "yes: a newer fact replaced it" : "no"]];
  for (const [name, value] of rows) {
    const dt = document.createElement("dt"); dt.textContent = name;
    const dd = document.createElement("dd"); dd.textContent = value;
    facts.append(dt, dd);
  }
  panel.append(facts);
  for (const text of data.evidence) {
    const quote = document.createElement("blockquote");
    quote.className = "evidence";
    quote.textContent = text;
    panel.append(quote);
  }
}

async function drawGraph() {
  const box = document.getElementById("cy");
  if (!box || !window.cytoscape) return;
  const panel = document.getElementById("edge-info");
  const dark = window.matchMedia("(prefers-color-scheme: dark)").matches;
  const ink = dark ? "#e6e6e6" : "#1d1d1f";
  const cy = cytoscape({
    container: box,
    style: [
      { selector: "node", style: { label: "data(id)", "background-color": "#3b82f6", color: ink, "font-size": 11,
        "text-valign": "bottom", "text-margin-y": 4, width: 18, height: 18 } },
      { selector: "node[distance = 0]", style: { "background-color": "#f59e0b", width: 26, height: 26 } },
      { selector: "node.expanded", style: { "border-width": 2, "border-color": ink } },
      { selector: "edge", style: { width: "mapData(strength, 0, 1, 1, 5)", "line-color": "#94a3b8",
        "target-arrow-color": "#94a3b8", "target-arrow-shape": "triangle", "curve-style": "bezier",
        label: "data(label)", "font-size": 9, color: ink, "text-rotation": "autorotate" } },
      { selector: "edge[?superseded]", style: { "line-style": "dashed", "line-color": "#ef4444",
        "target-arrow-color": "#ef4444" } },
      { selector: ":selected", style: { "line-color": "#f59e0b", "target-arrow-color": "#f59e0b" } },
    ],
  });
  window.zapomniGraph = cy;  // the browser tests read the drawn graph from here

  const add = (graph) => {
    const fresh = [];
    for (const node of graph.nodes) {
      if (cy.getElementById(node.id).empty()) fresh.push({ group: "nodes", data: node });
    }
    for (const edge of graph.edges) {
      if (cy.getElementById(edge.id).empty()) {
        fresh.push({ group: "edges", data: { ...edge, label: edge.predicate || edge.type } });
      }
    }
    cy.add(fresh);
    cy.layout({ name: "cose", animate: false, randomize: false, fit: true, padding: 20 }).run();
    box.dataset.nodes = String(cy.nodes().length);
    box.dataset.edges = String(cy.edges().length);
  };
  const load = async (url) => {
    const reply = await fetch(url, { headers: { accept: "application/json" }, credentials: "same-origin" });
    if (!reply.ok) { panel.textContent = `Could not load the graph (HTTP ${reply.status}).`; return null; }
    return reply.json();
  };

  const first = await load(box.dataset.source);
  if (first) add(first);
  performance.mark("zapomni-graph-drawn");  // bench/console.py times the page to here
  cy.on("tap", "node", async (event) => {
    const node = event.target;
    if (node.hasClass("expanded")) return;
    node.addClass("expanded");
    performance.mark("zapomni-expand-start");
    const more = await load(box.dataset.expand + encodeURIComponent(node.id()));
    if (more) add(more);
    performance.mark("zapomni-expand-drawn");
    box.dataset.expandedCount = String(cy.nodes(".expanded").length);
  });
  cy.on("tap", "edge", (event) => edgeInfo(panel, event.target.data()));
  box.dataset.ready = "true";
}

document.addEventListener("DOMContentLoaded", drawGraph);
