"""Each step of the course in one home: app/steps/<step>.py draws it (its charts, its workbench section,
its presenter screens); app/steps/drawing.py says how, and finds a step's home by its name."""
