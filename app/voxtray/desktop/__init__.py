"""The desktop session (`session`) and the Xlib calls hotkeys and output share (`xlib`)."""
