"""British -> American spellings for the English normaliser: one lower-case word to one
word each, built from stem lists with their suffixes plus irregular pairs."""

from __future__ import annotations

from collections.abc import Iterable

# Stems that take -ise/-isation in British use and -ize/-ization in American use. Listed
# by hand: many -ise verbs (advise, promise, surprise, exercise, ...) are -ise everywhere.
_IZE_STEMS = (
    "agon", "alphabet", "american", "apolog", "author", "bapt", "brutal", "cannibal", "capital",
    "caramel", "carbon", "categor", "cauter", "central", "character", "civil", "colon",
    "commercial", "compartmental", "computer", "conceptual", "contextual", "criminal", "critic",
    "crystall", "custom", "decentral", "dehuman", "demobil", "democrat", "demon", "demoral",
    "deodor", "desensit", "destabil", "digit", "dramat", "econom", "emphas", "energ", "equal",
    "euphem", "evangel", "external", "familiar", "fantas", "femin", "fertil", "fictional", "final",
    "formal", "fossil", "fraternal", "galvan", "general", "global", "harmon", "homogen",
    "hospital", "human", "hybrid", "hypnot", "ideal", "idol", "immobil", "immortal", "immun",
    "industrial", "initial", "institutional", "international", "italic", "item", "jeopard",
    "legal", "legitim", "liberal", "lion", "liquid", "local", "magnet", "marginal", "material",
    "maxim", "mechan", "memor", "memorial", "mesmer", "metabol", "militar", "miniatur", "minim",
    "mineral", "mobil", "modern", "monet", "monopol", "moral", "motor", "nasal", "national",
    "natural", "neutral", "normal", "optim", "organ", "ostrac", "oxid", "pasteur", "patron",
    "penal", "personal", "philosoph", "plagiar", "polar", "polymer", "popular", "pressur",
    "priorit", "privat", "proselyt", "public", "pulver", "radical", "random", "rational", "real",
    "recogn", "regular", "reorgan", "revital", "revolution", "rhapsod", "ritual", "romantic",
    "sanit", "satir", "scandal", "scrutin", "secular", "sensational", "sensit", "sentimental",
    "serial", "sermon", "social", "solemn", "special", "spiritual", "stabil", "standard", "steril",
    "stigmat", "styl", "subsid", "summar", "symbol", "sympath", "synchron", "synthes", "systemat",
    "tantal", "tempor", "tender", "terror", "theor", "tranquil", "trivial", "tyrann", "union",
    "urban", "util", "vandal", "vapor", "verbal", "victim", "visual", "vital", "vocal", "vulgar",
    "western", "winter", "woman",
)  # fmt: skip
_IZE_SUFFIXES = {
    s: s.replace("is", "iz", 1)
    for s in ("ise", "ised", "ises", "ising", "iser", "isers", "isable", "isation", "isations")
}

# -yse verbs. No "-yses" form: "analyses" and "paralyses" are also plural nouns.
_YZE_STEMS = ("anal", "breathal", "catal", "dial", "electrol", "paral")
_YZE_SUFFIXES = {s: s.replace("ys", "yz", 1) for s in ("yse", "ysed", "ysing", "yser", "ysers")}

# Stems spelt -our in British and -or in American English.
_OR_STEMS = (
    "arb", "ard", "arm", "behavi", "cand", "clam", "clang", "col", "demean", "discol", "dishon",
    "endeav", "enam", "fav", "ferv", "flav", "glam", "harb", "hon", "hum", "lab", "misbehavi",
    "misdemean", "multicol", "neighb", "od", "parl", "ranc", "rig", "rum", "sav", "savi", "splend",
    "succ", "tricol", "tum", "unfav", "val", "vap", "vig", "watercol",
)  # fmt: skip
_OR_SUFFIXES = {s: s.replace("our", "or", 1) for s in (
    "our", "ours", "oured", "ouring", "ourer", "ourers", "ourable", "ourably", "ourful",
    "ourfully", "ourless", "ourite", "ourites", "ouritism", "ourhood", "ourhoods", "ourly",
    "oural", "ourally", "oury", "ouration", "ourist", "ourists",
)}  # fmt: skip

# Words ending in an unstressed -l that British doubles before a suffix and American does
# not (travelled / traveled). Stressed ones (compel, rebel, control) double in both.
_SINGLE_L_STEMS = (
    "apparel", "barrel", "bevel", "bushel", "cancel", "carol", "cavil", "channel", "chisel",
    "counsel", "cudgel", "dial", "dishevel", "drivel", "duel", "empanel", "enamel", "equal",
    "fuel", "funnel", "gravel", "grovel", "impanel", "initial", "jewel", "kennel", "label",
    "level", "libel", "marshal", "marvel", "model", "panel", "parcel", "pedal", "pencil", "pummel",
    "quarrel", "ravel", "refuel", "relabel", "remodel", "revel", "rival", "shovel", "signal",
    "snivel", "spiral", "stencil", "swivel", "tassel", "total", "towel", "travel", "trowel",
    "tunnel", "unravel", "victual", "yodel",
)  # fmt: skip
_SINGLE_L_SUFFIXES = {"led": "ed", "ling": "ing", "ler": "er", "lers": "ers"}

# British -re endings that American writes -er.
_ER_STEMS = (
    "amphitheat", "calib", "cent", "centimet", "epicent", "fib", "goit", "kilomet", "lacklust",
    "lit", "lust", "meag", "met", "millimet", "mit", "och", "reconnoit", "sab", "saltpet", "scept",
    "sepulch", "somb", "spect", "theat", "tit",
)  # fmt: skip
_ER_SUFFIXES = {"re": "er", "res": "ers"}

# Everything the patterns above cannot express.
_IRREGULAR_SPELLINGS = {
    "aeon": "eon", "aeons": "eons", "aeroplane": "airplane", "aeroplanes": "airplanes",
    "ageing": "aging", "aluminium": "aluminum", "anaemia": "anemia", "anaemic": "anemic",
    "anaesthesia": "anesthesia", "anaesthetic": "anesthetic",
    "anaesthetics": "anesthetics", "anaesthetist": "anesthetist",
    "anaesthetise": "anesthetize", "anaesthetised": "anesthetized",
    "analogue": "analog", "analogues": "analogs", "annexe": "annex",
    "appal": "appall", "appals": "appalls", "artefact": "artifact",
    "artefacts": "artifacts", "acknowledgement": "acknowledgment",
    "acknowledgements": "acknowledgments", "abridgement": "abridgment",
    "armoury": "armory", "biassed": "biased", "caesarean": "cesarean",
    "carburettor": "carburetor", "catalogue": "catalog", "catalogues": "catalogs",
    "catalogued": "cataloged", "cataloguing": "cataloging", "centred": "centered",
    "centring": "centering", "cheque": "check", "cheques": "checks",
    "chequebook": "checkbook", "chequered": "checkered", "chilli": "chili",
    "chillies": "chilies", "cosier": "cozier", "cosiest": "coziest",
    "cosiness": "coziness", "cosy": "cozy", "councillor": "councilor",
    "councillors": "councilors", "counsellor": "counselor", "counsellors": "counselors",
    "defence": "defense", "defences": "defenses", "dialogue": "dialog",
    "dialogues": "dialogs", "diarrhoea": "diarrhea", "distil": "distill",
    "distils": "distills", "doughnut": "donut", "doughnuts": "donuts", "draught": "draft",
    "draughts": "drafts", "draughty": "drafty", "encyclopaedia": "encyclopedia",
    "encyclopaedias": "encyclopedias", "enrol": "enroll", "enrols": "enrolls",
    "enrolment": "enrollment", "enrolments": "enrollments", "enthral": "enthrall",
    "enthrals": "enthralls", "faeces": "feces", "fibreglass": "fiberglass",
    "focussed": "focused", "focusses": "focuses", "focussing": "focusing",
    "foetal": "fetal", "foetus": "fetus", "foetuses": "fetuses", "fulfil": "fulfill",
    "fulfilment": "fulfillment", "fulfils": "fulfills", "gaol": "jail", "gaoler": "jailer",
    "gaols": "jails", "grey": "gray", "greyer": "grayer", "greyest": "grayest",
    "greyish": "grayish", "greyness": "grayness", "greys": "grays",
    "gynaecologist": "gynecologist", "gynaecology": "gynecology",
    "haematology": "hematology", "haemoglobin": "hemoglobin", "haemophilia": "hemophilia",
    "haemorrhage": "hemorrhage", "haemorrhoids": "hemorrhoids",
    "homoeopathy": "homeopathy", "instalment": "installment",
    "instalments": "installments", "instil": "instill", "instils": "instills",
    "jeweller": "jeweler", "jewellers": "jewelers", "jewellery": "jewelry",
    "judgement": "judgment", "judgements": "judgments", "kerb": "curb", "kerbs": "curbs",
    "leukaemia": "leukemia", "libellous": "libelous", "licence": "license",
    "licences": "licenses", "manoeuvrable": "maneuverable", "manoeuvre": "maneuver",
    "manoeuvred": "maneuvered", "manoeuvres": "maneuvers", "manoeuvring": "maneuvering",
    "marvellous": "marvelous", "marvellously": "marvelously", "medallist": "medalist",
    "medallists": "medalists", "mediaeval": "medieval", "mitred": "mitered",
    "mollusc": "mollusk", "molluscs": "mollusks", "mould": "mold", "moulded": "molded",
    "moulding": "molding", "moulds": "molds", "mouldy": "moldy", "moult": "molt",
    "moulted": "molted", "moulting": "molting", "moustache": "mustache",
    "moustaches": "mustaches", "oedema": "edema", "oesophagus": "esophagus",
    "oestrogen": "estrogen", "offence": "offense", "offences": "offenses",
    "omelette": "omelet", "omelettes": "omelets", "orthopaedic": "orthopedic",
    "paediatric": "pediatric", "paediatrician": "pediatrician",
    "paediatrics": "pediatrics", "palaeontology": "paleontology", "panellist": "panelist",
    "panellists": "panelists", "pedlar": "peddler", "pedlars": "peddlers",
    "plough": "plow", "ploughed": "plowed", "ploughing": "plowing", "ploughs": "plows",
    "practise": "practice", "practised": "practiced", "practises": "practices",
    "practising": "practicing", "pretence": "pretense", "pretences": "pretenses",
    "programme": "program", "programmes": "programs", "pyjama": "pajama",
    "pyjamas": "pajamas", "sceptic": "skeptic", "sceptical": "skeptical",
    "sceptically": "skeptically", "scepticism": "skepticism", "sceptics": "skeptics",
    "sizeable": "sizable", "skilful": "skillful", "skilfully": "skillfully",
    "smoulder": "smolder", "smouldered": "smoldered", "smouldering": "smoldering",
    "smoulders": "smolders", "speciality": "specialty", "specialities": "specialties",
    "storey": "story", "storeys": "stories", "sulphate": "sulfate", "sulphide": "sulfide",
    "sulphur": "sulfur", "sulphuric": "sulfuric", "tranquillise": "tranquilize",
    "tranquillised": "tranquilized", "tranquilliser": "tranquilizer",
    "tranquillisers": "tranquilizers", "tranquillity": "tranquility", "tyre": "tire",
    "tyres": "tires", "wilful": "willful", "wilfully": "willfully", "woollen": "woolen",
    "woollens": "woolens", "worshipped": "worshiped", "worshipper": "worshiper",
    "worshippers": "worshipers", "worshipping": "worshiping", "yoghurt": "yogurt",
    "yoghurts": "yogurts",
}  # fmt: skip


def _spelling_pairs(stems: Iterable[str], suffixes: dict[str, str]) -> dict[str, str]:
    return {stem + old: stem + new for stem in stems for old, new in suffixes.items()}


BRITISH_TO_AMERICAN: dict[str, str] = {
    **_spelling_pairs(_IZE_STEMS, _IZE_SUFFIXES),
    **_spelling_pairs(_YZE_STEMS, _YZE_SUFFIXES),
    **_spelling_pairs(_OR_STEMS, _OR_SUFFIXES),
    **_spelling_pairs(_SINGLE_L_STEMS, _SINGLE_L_SUFFIXES),
    **_spelling_pairs(_ER_STEMS, _ER_SUFFIXES),
    **_IRREGULAR_SPELLINGS,
}
"""British spelling -> American spelling, one lower-case word to one word each."""
