-- Argo CD's health of a score.dev Workload, from its own status: Healthy when Ready, Degraded
-- while it waits for a person (the Stalled condition: an invalid specification, a policy, a
-- quota, a permission, a dependency that failed), Progressing otherwise (dependencies being
-- provisioned, a deployment under way, a change not processed yet).
local hs = {status = "Progressing", message = "Waiting for the control plane to report on the workload."}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
if obj.status.observedGeneration ~= nil and obj.metadata.generation ~= nil and obj.status.observedGeneration ~= obj.metadata.generation then
  hs.message = "Waiting for the control plane to process the latest change."
  return hs
end
local ready = nil
for _, condition in ipairs(obj.status.conditions) do
  if condition.type == "Stalled" and condition.status == "True" then
    hs.status = "Degraded"
    hs.message = condition.reason .. ": " .. condition.message
    return hs
  end
  if condition.type == "Ready" then
    ready = condition
  end
end
if ready == nil then
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
else
  hs.message = ready.reason .. ": " .. ready.message
  return hs
end
hs.message = ready.message
return hs
