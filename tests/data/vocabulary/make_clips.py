"""Makes this folder's clips with espeak-ng: python -m tests.data.vocabulary.make_clips

Each sentence is spoken by espeak-ng (22.05 kHz), resampled to 16 kHz mono 16-bit WAV by
Voxtray's own decoder, and listed in manifest.tsv with the vocabulary entries it holds.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.audio import write_wav
from voxtray.audio.decode import load_audio

HERE = Path(__file__).resolve().parent

# id, espeak-ng voice, sentence, the vocabulary entries it says
SENTENCES = [
    (
        "ps_kubectl",
        "en-us",
        "Run kubectl rollout restart before the Grafana alert fires.",
        "kubectl; Grafana",
    ),
    (
        "ps_postgres",
        "en-gb",
        "Siobhan moved the PostgreSQL replica to the Synology box.",
        "Siobhan; PostgreSQL; Synology",
    ),
    (
        "ps_nextcloud",
        "en-us",
        "Niamh says Nextcloud syncs faster than Seafile on our network.",
        "Niamh; Nextcloud; Seafile",
    ),
    (
        "ps_zigbee",
        "en-gb-x-rp",
        "The Zigbee bridge talks to Home Assistant through Mosquitto.",
        "Zigbee; Mosquitto",
    ),
    (
        "ps_przybylski",
        "en-us",
        "Doctor Przybylski prescribed metoprolol for the tachycardia.",
        "Przybylski; metoprolol; tachycardia",
    ),
    (
        "ps_nguyen",
        "en-gb",
        "Please forward the Terraform plan to Joaquin Nguyen today.",
        "Terraform; Joaquin Nguyen",
    ),
    ("ps_dvorak", "en-us", "Aoife plays Dvorak on Fridays after the standup.", "Aoife; Dvorak"),
    (
        "ps_idempotent",
        "en-gb-x-rp",
        "Make the Ansible playbook idempotent before Tadhg reviews it.",
        "Ansible; idempotent; Tadhg",
    ),
    (
        "ps_oauth",
        "en-us",
        "The OAuth token from Keycloak expired during the Jenkins build.",
        "OAuth; Keycloak; Jenkins",
    ),
    ("ps_voxtray", "en-gb", "Voxtray types what you say into any window.", "Voxtray"),
    (
        "ps_amlodipine",
        "en-us",
        "Continue amlodipine and check the eGFR in two weeks.",
        "amlodipine; eGFR",
    ),
    (
        "ps_xiaoming",
        "en-gb",
        "Xiaoming and Saoirse will demo the Figma prototype on Monday.",
        "Xiaoming; Saoirse; Figma",
    ),
    (
        "ps_nginx",
        "en-us",
        "Put nginx in front of the Gunicorn workers and enable Brotli.",
        "nginx; Gunicorn; Brotli",
    ),
    (
        "ps_eigen",
        "en-gb-x-rp",
        "The Jacobian has a negative eigenvalue near the saddle point.",
        "Jacobian; eigenvalue",
    ),
    (
        "ps_obsidian",
        "en-us",
        "Ruairi keeps his notes in Obsidian and syncs them with Syncthing.",
        "Ruairi; Obsidian; Syncthing",
    ),
    (
        "ps_wireguard",
        "en-gb",
        "Connect through WireGuard before you open the Proxmox console.",
        "WireGuard; Proxmox",
    ),
]


def speak(voice: str, text: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder) / "raw.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(raw), text], check=True)
        write_wav(out, load_audio(raw))


def main() -> int:
    rows = ["id\twav\treference\tvocabulary"]
    for clip_id, voice, text, entries in SENTENCES:
        wav = Path("wav") / f"{clip_id}.wav"
        speak(voice, text, HERE / wav)
        rows.append(f"{clip_id}\t{wav}\t{text}\t{entries}")
    (HERE / "manifest.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
