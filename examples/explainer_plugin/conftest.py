# Lets `pytest examples/explainer_plugin` import exag_topk from this folder without installing it first
# (pytest puts a conftest's folder on sys.path); installed, the package is found either way.
