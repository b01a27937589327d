"""The Labs page's three tabs (app/views/labs.py draws them): scores to weights, scaling, size and cost."""
